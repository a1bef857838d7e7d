"""The sign-in settings of local accounts, the trusted proxy and disabled
users (docs/signin.md), read from the environment; settings.py takes them
as they are."""

import ipaddress
import os

from django.core.exceptions import ImproperlyConfigured

from microcloud.env import envbool, envlist

__all__ = [
    "DISABLED_USERS_LINKS",
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
