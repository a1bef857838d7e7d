"""The tus endpoints of an upload request: /r/<token>/uploads/ and
/r/<token>/uploads/<id>, for whoever holds the link (and, for a request
with a password, gave it on the request's page).

The same protocol and code as the API's (uploads.endpoints); what differs is
whose uploads these are (the request's owner's, counted against the
request's limits and the owner's quota, by take_place in the creating
transaction), who may touch them (the uploads made through this request),
and their hard end (the request's deadline).

A stranger holding the link must not wear it down for its owner: every
request counts against the client address's rate (collect.guards); a
request and an owner take only so many unfinished uploads at once
(REQUEST_UNFINISHED_UPLOADS, REQUEST_UNFINISHED_UPLOADS_PER_OWNER);
an upload that never gets its first bytes goes after
REQUEST_UPLOAD_START_TIMEOUT, not a day; and what strangers set aside
leaves the owner room of their own (sharing.models.quotas).
"""

from datetime import timedelta

from django.conf import settings
from django.db.models import Subquery
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.permissions import AllowAny

from collect.guards import request_allowed
from collect.models import ReceivedFile, UploadRequest, request_open_q
from collect.places import RequestEnded, RequestFull, TooManyArriving, take_place
from collect.unlock import may_upload
from sharing.models import quotas
from uploads import protocol
from uploads.endpoints import UploadCollectionView, UploadView
from uploads.models import Upload
from uploads.protocol import TusError


class ThroughRequest:
    """What makes the API's tus views a request's."""

    authentication_classes = []
    permission_classes = [AllowAny]

    def initial(self, request, *args, **kwargs):
        decision = request_allowed(request)  # first: before anything costs a query
        if not decision.allowed:
            raise TusError(
                status.HTTP_429_TOO_MANY_REQUESTS,
                f"Too many requests from your address: try again in {decision.retry_after} seconds.",
                {"Retry-After": str(decision.retry_after)},
            )
        super().initial(request, *args, **kwargs)
        found = UploadRequest.objects.select_related("owner").filter(token=kwargs["token"]).first()
        if found is None:
            raise NotFound("No such upload request.")
        if not may_upload(request, found):
            raise PermissionDenied("This request asks for a password: give it on its page first.")
        self.upload_request = found

    def uploads_of(self, request):
        made_here = ReceivedFile.objects.filter(request=self.upload_request).values("upload_id")
        return Upload.objects.filter(pk__in=Subquery(made_here))

    def owned(self, request, upload_id: str) -> Upload:
        try:
            return super().owned(request, upload_id)
        except NotFound:
            # Its uploads went with it: say why, rather than that there never was one.
            if not UploadRequest.objects.filter(request_open_q(timezone.now()), pk=self.upload_request.pk).exists():
                raise ended() from None
            raise

    def uploader(self, request):
        return self.upload_request.owner

    def set_aside(self, request, upload: Upload) -> None:
        found = self.upload_request
        most = settings.REQUEST_UNFINISHED_UPLOADS
        try:
            take_place(found.pk, upload.pk, upload.filename, upload.length, arriving_at_most=most)
        except RequestEnded:
            raise ended() from None
        except RequestFull as full:
            raise TusError(status.HTTP_413_REQUEST_ENTITY_TOO_LARGE, full.message) from None
        except TooManyArriving as many:
            raise busy(
                f"This upload request already has {many.most} unfinished uploads, the most it takes at once: "
                "finish or cancel one of them, or try again later."
            ) from None
        upload.reserved_by = found.reserver
        most = settings.REQUEST_UNFINISHED_UPLOADS_PER_OWNER
        try:
            quotas.reserve(upload.owner_id, upload.length, by=upload.reserved_by, strangers_at_most=most)
        except quotas.StrangersAtLimit as many:
            raise busy(
                f"The owner of this upload request already has {many.most} unfinished uploads through their "
                "upload requests, the most they take at once: try again later."
            ) from None

    def deadline(self, request, now):
        # Short until the first bytes come: an upload nobody writes to gives
        # back its place and the owner's space within minutes. Its bytes
        # renew it as any upload's do (uploads.models.renewed_deadline).
        end = self.upload_request.expires_at
        return min(now + timedelta(seconds=settings.REQUEST_UPLOAD_START_TIMEOUT), end), end

    def upload_url(self, request, upload_id: str) -> str:
        return request.build_absolute_uri(reverse("collect:tus-upload", args=[self.upload_request.token, upload_id]))

    def progress_headers(self, upload: Upload) -> dict[str, str]:
        headers = super().progress_headers(upload)
        headers.pop(protocol.UPLOAD_FILE_HEADER, None)  # the owner's API, not the uploader's
        return headers


def busy(message: str) -> TusError:
    """Too many unfinished uploads at once: a limit on what is held, not a rate, so no Retry-After."""
    return TusError(status.HTTP_429_TOO_MANY_REQUESTS, message)


def ended() -> TusError:
    return TusError(status.HTTP_410_GONE, "This upload request has ended: it takes no more files.")


@extend_schema(exclude=True)
class RequestUploadCollectionView(ThroughRequest, UploadCollectionView):
    pass


@extend_schema(exclude=True)
class RequestUploadView(ThroughRequest, UploadView):
    pass
