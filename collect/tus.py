"""The tus endpoints of an upload request: /r/<token>/uploads/ and
/r/<token>/uploads/<id>, for whoever holds the link (and, for a request
with a password, gave it on the request's page).

The same protocol and code as the API's (uploads.endpoints); what differs is
whose uploads these are (the request's owner's, counted against the
request's limits and the owner's quota, by take_place in the creating
transaction), who may touch them (the uploads made through this request),
and their hard end (the request's deadline).
"""

from django.db.models import Subquery
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.permissions import AllowAny

from collect.models import ReceivedFile, UploadRequest, request_open_q
from collect.places import RequestEnded, RequestFull, take_place
from collect.unlock import may_upload
from sharing.models import quotas
from uploads import protocol
from uploads.endpoints import UploadCollectionView, UploadView
from uploads.models import Upload, expires_after
from uploads.protocol import TusError


class ThroughRequest:
    """What makes the API's tus views a request's."""

    authentication_classes = []
    permission_classes = [AllowAny]

    def initial(self, request, *args, **kwargs):
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
        try:
            take_place(self.upload_request.pk, upload.pk, upload.filename, upload.length)
        except RequestEnded:
            raise ended() from None
        except RequestFull as full:
            raise TusError(status.HTTP_413_REQUEST_ENTITY_TOO_LARGE, full.message) from None
        quotas.reserve(upload.owner_id, upload.length)

    def deadline(self, request, now):
        end = self.upload_request.expires_at
        return min(now + expires_after(), end), end

    def upload_url(self, request, upload_id: str) -> str:
        return request.build_absolute_uri(reverse("collect:tus-upload", args=[self.upload_request.token, upload_id]))

    def progress_headers(self, upload: Upload) -> dict[str, str]:
        headers = super().progress_headers(upload)
        headers.pop(protocol.UPLOAD_FILE_HEADER, None)  # the owner's API, not the uploader's
        return headers


def ended() -> TusError:
    return TusError(status.HTTP_410_GONE, "This upload request has ended: it takes no more files.")


@extend_schema(exclude=True)
class RequestUploadCollectionView(ThroughRequest, UploadCollectionView):
    pass


@extend_schema(exclude=True)
class RequestUploadView(ThroughRequest, UploadView):
    pass
