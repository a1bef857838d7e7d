"""A file posted by an upload request's page without JavaScript: stored
through the one path every upload takes, and counted against the request
in the transaction that stores it, so it is kept exactly when it fits."""

from functools import partial

from collect.models import ReceivedFile, UploadRequest
from collect.places import mark_arrived, take_place
from sharing.models import StoredFile


def receive_posted_file(upload_request: UploadRequest, uploaded) -> ReceivedFile:
    """Store `uploaded` as the request owner's file; RequestEnded,
    RequestFull or QuotaExceeded when it may not be (nothing is kept)."""
    received = []
    StoredFile.create_from_upload(
        owner=upload_request.owner, upload=uploaded, still_wanted=partial(_counted, upload_request, received)
    )
    return received[0]


def _counted(upload_request: UploadRequest, received: list, stored: StoredFile) -> bool:
    record = take_place(upload_request.pk, None, stored.name, stored.size)
    mark_arrived(record, stored)
    received.append(record)
    return True
