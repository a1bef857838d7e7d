"""Whether sign-in through the provider is on, and the settings
mozilla-django-oidc reads, each taken from ours (microcloud/oidc_settings.py)
or fixed here, so that no deployment can turn off a check."""

from django.conf import settings
from mozilla_django_oidc.utils import import_from_settings

BACKEND = "signin.oidc.backend.OIDCBackend"

# The protocol's checks, never a deployment's choice: PKCE (S256), a nonce
# in the ID token, the token's key found by its kid, no unsigned token.
FIXED = {
    "OIDC_USE_PKCE": True,
    "OIDC_PKCE_CODE_CHALLENGE_METHOD": "S256",
    "OIDC_USE_NONCE": True,
    "OIDC_VERIFY_KID": True,
    "OIDC_ALLOW_UNSECURED_JWT": False,
    "OIDC_VERIFY_SSL": True,
    # Kept for the provider's sign-out (signin/oidc/logout.py, id_token_hint).
    "OIDC_STORE_ID_TOKEN": True,
    "OIDC_STORE_ACCESS_TOKEN": False,
    # client_secret_basic: the client authentication every provider takes.
    "OIDC_TOKEN_USE_BASIC_AUTH": True,
    "OIDC_AUTHENTICATION_CALLBACK_URL": "signin-oidc:callback",
    "OIDC_REDIRECT_FIELD_NAME": "next",
}
OURS = {
    "OIDC_RP_CLIENT_ID": "OIDC_CLIENT_ID",
    "OIDC_RP_CLIENT_SECRET": "OIDC_CLIENT_SECRET",
    "OIDC_RP_SCOPES": "OIDC_SCOPES",
    "OIDC_RP_SIGN_ALGO": "OIDC_SIGN_ALGO",
    "OIDC_CREATE_USER": "OIDC_CREATE_USERS",
    "OIDC_TIMEOUT": "OIDC_TIMEOUT",
}


def enabled() -> bool:
    return bool(settings.OIDC_ISSUER)


def library_setting(name: str, *default):
    """The library's setting `name`, as its views and backend ask for it."""
    if name in FIXED:
        return FIXED[name]
    if name in OURS:
        return getattr(settings, OURS[name])
    return import_from_settings(name, *default)
