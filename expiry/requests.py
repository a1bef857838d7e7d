"""Upload requests end at their deadline: one of the daemon's row deadlines
(expiry.rows). When one falls due, collect.ending.end_if_due decides (the
request's row locked, the time read then); ending removes the uploads still
going through it. A request its owner closed first is left alone."""

from collect.ending import deadlines_before, end_if_due
from collect.models import UploadRequest, unended_q
from expiry.rows import RowSchedule


class UploadRequests:
    noun = "upload request"

    def deadlines_before(self, until):
        return deadlines_before(until)

    def end_if_due(self, upload_request_id: int) -> bool:
        return end_if_due(upload_request_id)

    def deadlines_of(self, upload_request_ids):
        rows = UploadRequest.objects.filter(unended_q(), pk__in=upload_request_ids)
        return [(pk, expires_at.timestamp()) for pk, expires_at in rows.values_list("pk", "expires_at")]


class RequestSchedule(RowSchedule):
    def __init__(self, **kwargs):
        super().__init__(UploadRequests(), **kwargs)
