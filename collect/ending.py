"""How an upload request ends: at its deadline (the expiry daemon) or when
its owner closes it, by one path.

Ending stamps the request with the time read once its row and the rows of
its uploads are locked (in that order, the order every path takes), and
removes every upload made through it that is still there: an unfinished
one with its bytes (a request writing to it finds its claim gone and is
refused), a finished one's row only (its file is the owner's). The uploads'
own deadlines (ends_by) already refuse any chunk or finish from the
request's deadline on, even with no daemon running; ending makes it final.
"""

import logging
from functools import partial

from django.db import transaction

from collect.models import ReceivedFile, UploadRequest, request_open_q, unended_q
from collect.signals import request_ended
from sharing.models.state import locked_now
from uploads.models import Upload, remove_upload

logger = logging.getLogger("collect")


def close_request(upload_request: UploadRequest) -> bool:
    """The owner ends an open request now; False if it had ended already."""
    return _end(upload_request.pk, UploadRequest.EndReason.CLOSED)


def delete_request(upload_request: UploadRequest) -> None:
    """The owner ends a request (if open) and forgets it, in one
    transaction; the files that arrived through it stay theirs."""
    with transaction.atomic():
        _end(upload_request.pk, UploadRequest.EndReason.CLOSED)
        UploadRequest.objects.filter(pk=upload_request.pk).delete()


def end_if_due(upload_request_id: int) -> bool:
    """The daemon ends a request whose deadline has passed (the one `due`
    rule, at the time read once its row is locked); False if it was not due
    (or had ended)."""
    return _end(upload_request_id, UploadRequest.EndReason.EXPIRED)


def _end(upload_request_id: int, reason: str) -> bool:
    with transaction.atomic():
        rows = UploadRequest.objects.filter(pk=upload_request_id)
        locked_now(rows)  # first, as every path does (collect.places.lock_request_of)
        # Then every upload made through it, before the time is read: a
        # finish that holds one commits first, and finished before the end.
        made_here = Upload.objects.filter(
            pk__in=ReceivedFile.objects.filter(request_id=upload_request_id).values("upload_id")
        )
        now = locked_now(made_here)
        which = rows.due(now) if reason == UploadRequest.EndReason.EXPIRED else rows.filter(request_open_q(now))
        if not which.update(ended_at=now, end_reason=reason):
            return False
        for upload in made_here:
            remove_upload(upload)
        transaction.on_commit(partial(request_ended.send, sender=UploadRequest, upload_request_id=upload_request_id))
    logger.info("upload request %s ended (%s)", upload_request_id, reason)
    return True


def deadlines_before(until) -> list[tuple[int, float]]:
    """(id, deadline as a timestamp) of the open requests due before
    `until`, for the expiry daemon's heap."""
    rows = (
        UploadRequest.objects.filter(unended_q(), expires_at__lt=until)
        .order_by("expires_at")
        .values_list("pk", "expires_at")
    )
    return [(pk, expires_at.timestamp()) for pk, expires_at in rows]
