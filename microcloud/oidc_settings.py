"""The OpenID Connect sign-in settings (docs/signin.md), read from the
environment; settings.py takes them as they are. Sign-in through the
provider is on exactly when OIDC_ISSUER is set."""

import os

from django.core.exceptions import ImproperlyConfigured

from microcloud.env import envbool, envfloat, envlist

__all__ = [
    "LOCAL_LOGIN",
    "OIDC_ADMIN_GROUPS",
    "OIDC_CLIENT_ID",
    "OIDC_CLIENT_SECRET",
    "OIDC_CREATE_USERS",
    "OIDC_EMAIL_CLAIM",
    "OIDC_GROUPS_CLAIM",
    "OIDC_ISSUER",
    "OIDC_PROVIDER_NAME",
    "OIDC_SCOPES",
    "OIDC_SIGN_ALGO",
    "OIDC_STAFF_GROUPS",
    "OIDC_TIMEOUT",
    "OIDC_USERNAME_CLAIM",
]

# The issuer exactly as the provider writes it in its discovery document
# (<issuer>/.well-known/openid-configuration), which gives every endpoint.
OIDC_ISSUER = os.environ.get("OIDC_ISSUER", "").strip()
if OIDC_ISSUER and not OIDC_ISSUER.startswith(("https://", "http://")):
    raise ImproperlyConfigured(f"OIDC_ISSUER must be an http:// or https:// URL, got {OIDC_ISSUER!r}")
OIDC_CLIENT_ID = os.environ.get("OIDC_CLIENT_ID", "").strip()
OIDC_CLIENT_SECRET = os.environ.get("OIDC_CLIENT_SECRET", "").strip()
# Or from a file (a container's secret), as SECRET_KEY_FILE.
_secret_file = os.environ.get("OIDC_CLIENT_SECRET_FILE", "").strip()
if _secret_file and not OIDC_CLIENT_SECRET:
    try:
        with open(_secret_file, encoding="utf-8") as _handle:
            OIDC_CLIENT_SECRET = _handle.read().strip()
    except OSError as exc:
        raise ImproperlyConfigured(f"OIDC_CLIENT_SECRET_FILE {_secret_file!r} cannot be read: {exc.strerror}") from None
if OIDC_ISSUER and not (OIDC_CLIENT_ID and OIDC_CLIENT_SECRET):
    raise ImproperlyConfigured("OIDC_ISSUER is set: OIDC_CLIENT_ID and OIDC_CLIENT_SECRET must be set too")
# The button reads "Sign in with <OIDC_PROVIDER_NAME>".
OIDC_PROVIDER_NAME = os.environ.get("OIDC_PROVIDER_NAME", "").strip() or "single sign-on"
OIDC_SCOPES = " ".join(os.environ.get("OIDC_SCOPES", "openid email profile").split())
if OIDC_ISSUER and "openid" not in OIDC_SCOPES.split():
    raise ImproperlyConfigured(f"OIDC_SCOPES must include openid, got {OIDC_SCOPES!r}")
# Which claims name the account (matched to the username here: pick one the
# user cannot change at the provider), its email and its groups.
OIDC_USERNAME_CLAIM = os.environ.get("OIDC_USERNAME_CLAIM", "").strip() or "preferred_username"
OIDC_EMAIL_CLAIM = os.environ.get("OIDC_EMAIL_CLAIM", "").strip() or "email"
OIDC_GROUPS_CLAIM = os.environ.get("OIDC_GROUPS_CLAIM", "").strip() or "groups"
# Members of these groups are made superusers (and staff), of the staff
# groups staff, at every sign-in; a member no more loses the role. Empty:
# the role is left as an administrator set it here.
OIDC_ADMIN_GROUPS = envlist("OIDC_ADMIN_GROUPS", [])
OIDC_STAFF_GROUPS = envlist("OIDC_STAFF_GROUPS", [])
# On (the default): a first sign-in makes the account; off: only accounts
# that already exist here may sign in through the provider.
OIDC_CREATE_USERS = envbool("OIDC_CREATE_USERS", True)
# The ID token's signature algorithm; the provider's keys come from its jwks_uri.
OIDC_SIGN_ALGO = os.environ.get("OIDC_SIGN_ALGO", "").strip() or "RS256"
if OIDC_SIGN_ALGO[:2] not in ("RS", "ES", "PS"):
    raise ImproperlyConfigured(f"OIDC_SIGN_ALGO must be an RS, PS or ES algorithm, got {OIDC_SIGN_ALGO!r}")
# Seconds each request to the provider may take.
OIDC_TIMEOUT = envfloat("OIDC_TIMEOUT", 10.0)
# Off: the sign-in page shows no password form (the provider's button only);
# /admin/login/ keeps its own, the way in for a break-glass administrator.
LOCAL_LOGIN = envbool("LOCAL_LOGIN", True)
