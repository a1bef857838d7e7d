"""The signed cookie a public link hands out, scoped to its own link path.

The unlock cookie says the browser gave the link's password. Its salt
includes the password hash, so changing or removing the password revokes
every unlock at once. It lives until the share's deadline and no longer: a
link that ended by time is never served, whatever a cookie says.

Resuming a download needs no cookie: the link's byte budget decides what a
range may fetch (sharing.models.budget).
"""

from functools import lru_cache

from django.conf import settings
from django.core import signing
from django.urls import get_script_prefix, reverse
from django.utils import timezone

from sharing.models import Share

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


def _unlock_salt(share: Share) -> str:
    return f"links.unlock.{share.token}.{share.password_hash}"


def give_unlock(response, share: Share) -> None:
    _set(response, share, UNLOCK_COOKIE, "1", _unlock_salt(share))


def is_unlocked(request, share: Share) -> bool:
    return _get(request, UNLOCK_COOKIE, _unlock_salt(share)) == "1"
