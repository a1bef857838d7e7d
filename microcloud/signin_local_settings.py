"""The sign-in settings of local accounts, the trusted proxy, the LDAP
directory and disabled users (docs/signin.md), read from the environment; settings.py takes them
as they are."""

import importlib.util
import ipaddress
import os

from django.core.exceptions import ImproperlyConfigured

from microcloud.env import envbool, envlist

__all__ = [
    "DISABLED_USERS_LINKS",
    "LDAP_BIND_DN",
    "LDAP_BIND_PASSWORD",
    "LDAP_CA_FILE",
    "LDAP_GROUP_SEARCH_BASE",
    "LDAP_SERVER_URI",
    "LDAP_STAFF_GROUPS",
    "LDAP_START_TLS",
    "LDAP_SUPERUSER_GROUPS",
    "LDAP_USER_FILTER",
    "LDAP_USER_SEARCH_BASE",
    "TOTP_ISSUER",
    "TOTP_REQUIRED_FOR_STAFF",
    "TRUSTED_PROXY_ADDRESSES",
    "TRUSTED_PROXY_HEADER",
]

# What a disabled user's links do: "keep" (the default: they go on until
# they end as they would have) or "end" (ended at once, as an unshare).
DISABLED_USERS_LINKS = os.environ.get("DISABLED_USERS_LINKS", "keep").strip().lower() or "keep"
if DISABLED_USERS_LINKS not in ("keep", "end"):
    raise ImproperlyConfigured(f"DISABLED_USERS_LINKS must be keep or end, got {DISABLED_USERS_LINKS!r}")

# A forward-auth proxy's header naming the signed-in user (e.g. Remote-User).
# Empty (the default): no header signs anyone in.
TRUSTED_PROXY_HEADER = os.environ.get("TRUSTED_PROXY_HEADER", "").strip()
# The proxy's addresses (CIDRs): the header from any other address is ignored.
TRUSTED_PROXY_ADDRESSES = envlist("TRUSTED_PROXY_ADDRESSES", [])
for _cidr in TRUSTED_PROXY_ADDRESSES:
    try:
        ipaddress.ip_network(_cidr, strict=False)
    except ValueError:
        raise ImproperlyConfigured(f"TRUSTED_PROXY_ADDRESSES: {_cidr!r} is not an address or CIDR") from None
if TRUSTED_PROXY_HEADER and not TRUSTED_PROXY_ADDRESSES:
    raise ImproperlyConfigured("TRUSTED_PROXY_HEADER needs TRUSTED_PROXY_ADDRESSES (the proxy's CIDRs)")

# Staff accounts signed in with a local password must add a second factor
# (a TOTP code) before any page, the admin included.
TOTP_REQUIRED_FOR_STAFF = envbool("TOTP_REQUIRED_FOR_STAFF", False)
# The name an authenticator app shows beside the account.
TOTP_ISSUER = os.environ.get("TOTP_ISSUER", "microcloud").strip() or "microcloud"

# An LDAP directory or Active Directory (signin/directory.py). Empty
# LDAP_SERVER_URI (the default): off. ldap:// or ldaps:// URIs.
LDAP_SERVER_URI = os.environ.get("LDAP_SERVER_URI", "").strip()
if LDAP_SERVER_URI and not LDAP_SERVER_URI.startswith(("ldap://", "ldaps://")):
    raise ImproperlyConfigured(f"LDAP_SERVER_URI must start with ldap:// or ldaps://, got {LDAP_SERVER_URI!r}")
if LDAP_SERVER_URI and importlib.util.find_spec("django_auth_ldap") is None:
    raise ImproperlyConfigured("LDAP_SERVER_URI needs django-auth-ldap and python-ldap: see requirements-ldap.txt")
# StartTLS on ldap:// before anything is sent; LDAP_CA_FILE: the CA to trust
# for the server's certificate (empty: the system's).
LDAP_START_TLS = envbool("LDAP_START_TLS", False)
LDAP_CA_FILE = os.environ.get("LDAP_CA_FILE", "").strip()
# The account the site binds as to search (empty: an anonymous search).
LDAP_BIND_DN = os.environ.get("LDAP_BIND_DN", "")
LDAP_BIND_PASSWORD = os.environ.get("LDAP_BIND_PASSWORD", "")
# Where users are searched, and the filter naming one (%(user)s: what was
# typed). A user the filter does not find cannot sign in: add a condition
# that leaves disabled accounts out.
LDAP_USER_SEARCH_BASE = os.environ.get("LDAP_USER_SEARCH_BASE", "").strip()
LDAP_USER_FILTER = os.environ.get("LDAP_USER_FILTER", "(uid=%(user)s)").strip() or "(uid=%(user)s)"
if LDAP_SERVER_URI and not LDAP_USER_SEARCH_BASE:
    raise ImproperlyConfigured("LDAP_SERVER_URI needs LDAP_USER_SEARCH_BASE (where users are searched)")
if "%(user)s" not in LDAP_USER_FILTER:
    raise ImproperlyConfigured(f"LDAP_USER_FILTER must contain %(user)s, got {LDAP_USER_FILTER!r}")
# groupOfNames groups under this base; members of LDAP_STAFF_GROUPS are staff
# and of LDAP_SUPERUSER_GROUPS superusers (group DNs, separated by ";"), set
# again at every sign-in.
LDAP_GROUP_SEARCH_BASE = os.environ.get("LDAP_GROUP_SEARCH_BASE", "").strip()
LDAP_STAFF_GROUPS = [dn.strip() for dn in os.environ.get("LDAP_STAFF_GROUPS", "").split(";") if dn.strip()]
LDAP_SUPERUSER_GROUPS = [dn.strip() for dn in os.environ.get("LDAP_SUPERUSER_GROUPS", "").split(";") if dn.strip()]
if (LDAP_STAFF_GROUPS or LDAP_SUPERUSER_GROUPS) and not LDAP_GROUP_SEARCH_BASE:
    raise ImproperlyConfigured("LDAP_STAFF_GROUPS and LDAP_SUPERUSER_GROUPS need LDAP_GROUP_SEARCH_BASE")
