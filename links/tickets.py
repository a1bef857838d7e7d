"""Signed cookies a public link hands out, each scoped to its own link path.

- The resume ticket names the Download a counted request started; a later
  request that resumes that download (a range starting past byte 0) and
  carries it is not counted again (Share.resume_download decides how much it
  may fetch).
- The unlock cookie says the browser gave the link's password. Its salt
  includes the password hash, so changing or removing the password revokes
  every unlock at once.

Both live until the share's deadline and no longer: a link that ended by time
is never served, whatever a cookie says.
"""

from functools import lru_cache

from django.conf import settings
from django.core import signing
from django.urls import get_script_prefix, reverse
from django.utils import timezone

from sharing.models import Share

RESUME_COOKIE = "mc_resume"
UNLOCK_COOKIE = "mc_unlock"


def link_path(share: Share) -> str:
    return _link_prefix(get_script_prefix()) + share.token


@lru_cache(maxsize=8)
def _link_prefix(script_prefix: str) -> str:
    # reverse() on every download cost more than signing the cookie; tokens
    # are URL-safe, so the path is this prefix and the token.
    return reverse("public-share", args=["T"])[:-1]


def _seconds_left(share: Share) -> int:
    return max(1, int((share.expires_at - timezone.now()).total_seconds()) + 1)


def _set(response, share: Share, name: str, value: str, salt: str) -> None:
    response.set_signed_cookie(
        name,
        value,
        salt=salt,
        max_age=_seconds_left(share),
        path=link_path(share),
        secure=settings.SESSION_COOKIE_SECURE,
        httponly=True,
        samesite="Lax",
    )


def _get(request, name: str, salt: str) -> str | None:
    try:
        return request.get_signed_cookie(name, default=None, salt=salt)
    except signing.BadSignature:
        return None


def _resume_salt(share: Share) -> str:
    return f"links.resume.{share.token}"


def _unlock_salt(share: Share) -> str:
    return f"links.unlock.{share.token}.{share.password_hash}"


def give_resume_ticket(response, share: Share, download_id: int) -> None:
    _set(response, share, RESUME_COOKIE, str(download_id), _resume_salt(share))


def resume_ticket(request, share: Share) -> int | None:
    """The Download id the request's ticket names, if it is one of ours for this link."""
    value = _get(request, RESUME_COOKIE, _resume_salt(share))
    return int(value) if value and value.isdigit() else None


def give_unlock(response, share: Share) -> None:
    _set(response, share, UNLOCK_COOKIE, "1", _unlock_salt(share))


def is_unlocked(request, share: Share) -> bool:
    return _get(request, UNLOCK_COOKIE, _unlock_salt(share)) == "1"
