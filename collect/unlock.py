"""The signed cookie that says a browser gave a request's password.

Scoped to the request's own path (its page and its upload endpoints), with
the password hash in its salt, so changing the password revokes every
unlock; it lasts until the request's deadline and no longer.
"""

from django.conf import settings
from django.core import signing
from django.urls import reverse
from django.utils import timezone

from collect.models import UploadRequest

UNLOCK_COOKIE = "mc_request_unlock"


def request_path(upload_request: UploadRequest) -> str:
    return reverse("collect:page", args=[upload_request.token])


def _salt(upload_request: UploadRequest) -> str:
    return f"collect.unlock.{upload_request.token}.{upload_request.password_hash}"


def give_unlock(response, upload_request: UploadRequest) -> None:
    seconds_left = (upload_request.expires_at - timezone.now()).total_seconds()
    response.set_signed_cookie(
        UNLOCK_COOKIE,
        "1",
        salt=_salt(upload_request),
        max_age=max(1, int(seconds_left) + 1),
        path=request_path(upload_request),
        secure=settings.SESSION_COOKIE_SECURE,
        httponly=True,
        samesite="Lax",
    )


def may_upload(request, upload_request: UploadRequest) -> bool:
    """No password, or this browser gave it."""
    if not upload_request.has_password:
        return True
    try:
        return request.get_signed_cookie(UNLOCK_COOKIE, default=None, salt=_salt(upload_request)) == "1"
    except signing.BadSignature:
        return False
