"""The provider's discovery document (<issuer>/.well-known/openid-configuration):
fetched at the first sign-in, kept for an hour, so a provider that moves an
endpoint or rolls its configuration is followed without a restart."""

import time

import requests
from django.conf import settings
from django.utils.translation import gettext_lazy as _

from signin.oidc.refusals import ProviderUnavailable

KEEP_SECONDS = 3600
REQUIRED = ("authorization_endpoint", "token_endpoint", "jwks_uri")
UNREACHABLE = _("The sign-in service cannot be reached right now. Try again in a few minutes.")

# issuer -> (when it was fetched, the document); one per process, a failed
# fetch is not kept, so the next sign-in asks again.
_kept: dict[str, tuple[float, dict]] = {}


def discovery_url(issuer: str) -> str:
    return issuer.rstrip("/") + "/.well-known/openid-configuration"


def document(*, clock=time.monotonic) -> dict:
    """The current issuer's document, fetched when none younger than KEEP_SECONDS is kept."""
    issuer = settings.OIDC_ISSUER
    kept = _kept.get(issuer)
    if kept is not None and clock() - kept[0] < KEEP_SECONDS:
        return kept[1]
    found = fetch(issuer)
    _kept[issuer] = (clock(), found)
    return found


def fetch(issuer: str) -> dict:
    url = discovery_url(issuer)
    try:
        response = requests.get(url, timeout=settings.OIDC_TIMEOUT)
        response.raise_for_status()
        found = response.json()
    except (requests.RequestException, ValueError) as exc:
        raise ProviderUnavailable(UNREACHABLE, detail=f"{url}: {exc}") from None
    if not isinstance(found, dict):
        raise ProviderUnavailable(UNREACHABLE, detail=f"{url}: not a JSON object")
    # OpenID Connect Discovery 1.0, section 4.3: the issuer must be the one asked for.
    if found.get("issuer") != issuer:
        raise ProviderUnavailable(
            UNREACHABLE, detail=f"{url} names the issuer {found.get('issuer')!r}, not OIDC_ISSUER {issuer!r}"
        )
    missing = [name for name in REQUIRED if not isinstance(found.get(name), str) or not found[name]]
    if missing:
        raise ProviderUnavailable(UNREACHABLE, detail=f"{url} has no {', '.join(missing)}")
    return found


def forget() -> None:
    """Drop every kept document (the tests, between providers)."""
    _kept.clear()
