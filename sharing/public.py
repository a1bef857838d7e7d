"""The public link: /s/<token> downloads the shared file, no account needed.

The share is checked against the clock of this request, not against the
expiry daemon's bookkeeping, so a link is never served after its expires_at
even if no daemon runs. The final check is the model's conditional UPDATE
(Share.count_download), made after the file is open and right before the
bytes go out: a download racing an unshare is either counted and served, or
refused, never served uncounted.
"""

import logging

from django.db import DatabaseError
from django.http import FileResponse, HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_safe

from sharing.models import Share

logger = logging.getLogger(__name__)

GONE_MESSAGES = {
    Share.Status.EXPIRED: "This link has expired.",
    Share.Status.UNSHARED: "This link has been unshared.",
}
FILE_GONE_MESSAGE = "The shared file is no longer available."


def plain(status: int, message: str) -> HttpResponse:
    response = HttpResponse(f"{message}\n", status=status, content_type="text/plain; charset=utf-8")
    # An answer about a link that can expire must not be replayed from a cache.
    response["Cache-Control"] = "no-store"
    return response


def gone(share: Share) -> HttpResponse:
    if share.end_reason == Share.EndReason.FILE_DELETED:
        return plain(410, FILE_GONE_MESSAGE)
    return plain(410, GONE_MESSAGES.get(share.effective_status(), FILE_GONE_MESSAGE))


@require_safe
def download(request, token: str):
    """Stream the shared file (GET counts a download, HEAD does not)."""
    try:
        return serve(request, token)
    except DatabaseError:
        # A database too busy to answer in SQLITE_BUSY_TIMEOUT is a temporary
        # condition; the client should retry, not see a server error page.
        logger.exception("Public link %s… could not reach the database", token[:6])
        response = plain(503, "The service is busy; try again in a moment.")
        response["Retry-After"] = "1"
        return response


def serve(request, token: str) -> HttpResponse:
    share = Share.objects.select_related("file").filter(token=token).first()
    if share is None:
        return plain(404, "No such link.")
    # Cheap early answer for links that have plainly ended; the authoritative
    # check is the conditional UPDATE below.
    if not share.is_servable(timezone.now()):
        return gone(share)
    stored = share.file
    if stored is None:
        return plain(410, FILE_GONE_MESSAGE)
    try:
        handle = stored.content.storage.open(stored.content.name, "rb")
    except OSError:
        logger.warning("Share %s points at missing bytes %s", share.pk, stored.content.name)
        return plain(410, FILE_GONE_MESSAGE)

    if request.method == "GET":
        servable = share.count_download()
    else:
        servable = Share.objects.servable(timezone.now()).filter(pk=share.pk).exists()
    if not servable:
        handle.close()
        # Re-read to say why: unshared or expired since the first look.
        current = Share.objects.filter(pk=share.pk).first()
        return gone(current) if current else plain(410, FILE_GONE_MESSAGE)

    response = FileResponse(handle, as_attachment=True, filename=stored.name, content_type=stored.content_type)
    response["Cache-Control"] = "no-store"
    return response
