"""Unfinished (and finished, kept) resumable uploads end at their deadline too.

An upload's deadline (Upload-Expires) is one of the daemon's row deadlines
(expiry.rows). When it falls due, uploads.models.remove_if_due decides: an
upload a chunk renewed meanwhile stays, and is scheduled again at its new
deadline. Removal deletes the row, gives back the space it set aside and
unlinks its bytes right after the commit.
"""

from expiry.rows import RowSchedule
from uploads.models import Upload, deadlines_before, remove_if_due


class Uploads:
    noun = "upload"

    def deadlines_before(self, until):
        return deadlines_before(until)

    def end_if_due(self, upload_id: str) -> bool:
        return remove_if_due(upload_id)

    def deadlines_of(self, upload_ids):
        rows = Upload.objects.filter(pk__in=upload_ids).values_list("pk", "expires_at")
        return [(pk, expires_at.timestamp()) for pk, expires_at in rows]


class UploadSchedule(RowSchedule):
    def __init__(self, **kwargs):
        super().__init__(Uploads(), **kwargs)
