"""Taking and giving back a request's places (files and bytes), in the database.

A new upload takes one file and its length in bytes with one conditional
UPDATE, at the time read once the request's row is locked: of any number
of uploaders racing for the last place exactly one gets it. An unfinished
upload that goes (terminated, expired, or ended with its request) gives its
place back (collect.receivers); a file that arrived keeps it.
"""

from functools import partial

from django.db import transaction
from django.db.models import F
from django.template.defaultfilters import filesizeformat
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from collect.models import ReceivedFile, UploadRequest, request_open_q, room_q
from collect.signals import file_arriving, file_received
from sharing.models.state import locked_now


class RequestEnded(Exception):
    """The request takes no more uploads: past its deadline, or closed."""


class RequestFull(Exception):
    """One more file of this size passes one of the request's limits."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class TooManyArriving(Exception):
    """The request already has the most unfinished uploads it takes at once."""

    def __init__(self, most: int):
        super().__init__(f"{most} unfinished uploads")
        self.most = most


def take_place(
    upload_request_id: int, upload_id: str | None, name: str, length: int, *, arriving_at_most: int | None = None
) -> ReceivedFile:
    """Inside the creating upload's transaction (or the stored file's, for a
    file posted by the page's form): count it against the request, and
    record it as arriving. RequestEnded or RequestFull when it may not start,
    TooManyArriving when the request has `arriving_at_most` unfinished
    uploads already (the caller's transaction then rolls back)."""
    assert transaction.get_connection().in_atomic_block, "called inside the upload's transaction"
    rows = UploadRequest.objects.filter(pk=upload_request_id)
    now = locked_now(rows)
    # Counted under the request's lock: every upload that starts through it
    # takes that lock first, so none can slip in between the count and the
    # insert (one that finishes meanwhile only makes the count high).
    if arriving_at_most is not None and arriving(upload_request_id) >= arriving_at_most:
        found = rows.first()
        if found is None or not found.is_open(now):
            raise RequestEnded()
        raise TooManyArriving(arriving_at_most)
    taken = rows.filter(request_open_q(now), room_q(length)).update(
        files_taken=F("files_taken") + 1, bytes_taken=F("bytes_taken") + length
    )
    if not taken:
        raise why_not(rows.first(), now, length)
    return ReceivedFile.objects.create(
        request_id=upload_request_id, upload_id=upload_id, name=name, size=length, started_at=now
    )


def arriving(upload_request_id: int) -> int:
    """How many uploads through the request are unfinished."""
    return ReceivedFile.objects.filter(request_id=upload_request_id, finished_at__isnull=True).count()


def why_not(upload_request: UploadRequest | None, now, length: int) -> Exception:
    """Why take_place found no room, read from the row it looked at."""
    if upload_request is None or not upload_request.is_open(now):
        return RequestEnded()
    limit = upload_request.max_files
    if limit is not None and upload_request.files_taken >= limit:
        return RequestFull(
            ngettext(
                "This request accepts %(count)d file, and it has it.",
                "This request accepts %(count)d files, and it has them all.",
                limit,
            )
            % {"count": limit}
        )
    if upload_request.is_full():
        return RequestFull(_("This request is full: it takes no more files."))
    left = max(0, (upload_request.max_bytes or 0) - upload_request.bytes_taken)
    return RequestFull(
        _("This file (%(size)s) is larger than the room this request has left (%(left)s).")
        % {"size": filesizeformat(length), "left": filesizeformat(left)}
    )


def lock_request_of(upload_id: str) -> None:
    """Lock the request an upload was made through (if any), before the
    upload's row: locks are taken request, then uploads, then the owner's
    storage account, by every path (creating, finishing, removing, ending),
    so none waits for a row another holds while it waits for one of its own."""
    made_through = ReceivedFile.objects.filter(upload_id=upload_id).values("request_id")
    locked_now(UploadRequest.objects.filter(pk__in=made_through))


def give_back(upload_id: str) -> bool:
    """Inside the transaction that removed an unfinished upload: its place is
    free again, and its record goes. Once: the record is deleted here."""
    received = ReceivedFile.objects.filter(upload_id=upload_id, finished_at__isnull=True).first()
    if received is None:
        return False
    ReceivedFile.objects.filter(pk=received.pk).delete()
    UploadRequest.objects.filter(pk=received.request_id).update(
        files_taken=F("files_taken") - 1, bytes_taken=F("bytes_taken") - received.size
    )
    return True


def mark_arrived(received: ReceivedFile, stored) -> None:
    """Inside the transaction that stores the file: its upload finished.
    It arrived, and whoever listens hears of it once that commits, unless
    its malware scan is owed: then it arrives when the scan clears it
    (announce_arrival, from collect.receivers)."""
    received.finished_at, received.file = timezone.now(), stored
    ReceivedFile.objects.filter(pk=received.pk).update(finished_at=received.finished_at, file=stored)
    if received.state == "arrived":
        announce_arrival(received)


def announce_arrival(received: ReceivedFile) -> None:
    """Inside the transaction in which `received` arrived: its webhook
    deliveries now, its notice after the commit."""
    file_arriving.send(sender=ReceivedFile, received=received)
    transaction.on_commit(
        partial(file_received.send, sender=ReceivedFile, upload_request_id=received.request_id, received_id=received.pk)
    )
