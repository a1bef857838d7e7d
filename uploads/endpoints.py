"""The tus endpoints: /api/uploads/ (create, discover) and
/api/uploads/<id> (offset, append, terminate); an upload request's
endpoints (collect.tus) extend them.

They are DRF views for DRF's authentication, permission and JSON error
answers, like the rest of the API; the body is never parsed by DRF
(request.data is not touched) but read from the request as a stream by
uploads.writing. They stay out of the OpenAPI schema: tus is a protocol of
headers over a binary body, which docs/api.md describes.
"""

from functools import partial

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from sharing.models import QuotaExceeded, UploadTooLarge, check_upload, clean_file_name, quotas
from uploads import protocol
from uploads.finishing import BytesMissing, finish
from uploads.models import Upload, create_partial_file, discard_partial_file, expires_after, remove_upload
from uploads.protocol import TusError
from uploads.signals import upload_created
from uploads.writing import ClaimLost, claim, commit, least_chunk, receive, too_small


class JSONOnly(BaseContentNegotiation):
    """Errors are JSON whatever Accept says (a tus client may ask for anything)."""

    def select_parser(self, request, parsers):
        return None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class TusView(APIView):
    renderer_classes = [JSONRenderer]
    content_negotiation_class = JSONOnly

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)  # authentication and permissions first: 401 before 412
        if request.method != "OPTIONS":
            protocol.require_version(request)

    def handle_exception(self, exc):
        if isinstance(exc, ValidationError):  # the models' rules, e.g. on finishing
            exc = TusError(status.HTTP_400_BAD_REQUEST, " ".join(exc.messages))
        response = super().handle_exception(exc)
        for name, value in getattr(exc, "headers", {}).items():
            response[name] = value
        if getattr(exc, "reason", None):
            response.reason_phrase = exc.reason
        return response

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        response["Tus-Resumable"] = protocol.TUS_VERSION
        return response

    def options(self, request, *args, **kwargs):
        return Response(
            status=status.HTTP_204_NO_CONTENT,
            headers={
                "Tus-Version": protocol.TUS_VERSION,
                "Tus-Extension": protocol.EXTENSIONS,
                "Tus-Max-Size": str(settings.MAX_UPLOAD_BYTES),
                "Tus-Checksum-Algorithm": ",".join(protocol.CHECKSUMS),
                # What holds for any upload allowed: the least chunk grows with the length.
                "Upload-Limit": protocol.upload_limit(
                    least_chunk(settings.MAX_UPLOAD_BYTES), settings.TUS_MAX_CHUNK_BYTES
                ),
            },
        )

    def chunk_rules(self, request):
        """The body's size and checksum, checked before any of it is read."""
        size = protocol.content_length(request)
        if size is None:
            raise protocol.length_required()
        if size > settings.TUS_MAX_CHUNK_BYTES:
            raise protocol.chunk_too_large(settings.TUS_MAX_CHUNK_BYTES)
        return size, protocol.parse_checksum(request.headers.get("Upload-Checksum"))

    def chunk_fits(self, request, offset: int, size: int, length: int) -> None:
        """Refuse a chunk too small for the store to take cheaply
        (uploads.writing.too_small), its bytes read but never written."""
        if too_small(offset, size, length):
            protocol.drain(request._request, size)
            raise protocol.chunk_too_small(size, least_chunk(length), settings.TUS_MAX_CHUNK_BYTES)

    def append(self, request, upload: Upload, offset: int, size: int, checksum) -> Upload:
        """Append the body at `offset` (see uploads.writing); finish the
        upload when that completes it. Return the upload as it is after."""
        write_claim = claim(upload.pk, upload.owner_id, offset)
        if write_claim is None:
            raise self.refusal(request, upload.pk, offset)
        try:
            got = receive(request._request, write_claim, offset, size, checksum, upload.length)
        except FileNotFoundError:  # terminated meanwhile (404), or its bytes lost (410)
            write_claim.release()
            self.owned(request, upload.pk)
            raise bytes_gone() from None
        except ClaimLost:
            raise TusError(
                status.HTTP_409_CONFLICT,
                "This request was too slow and another one took over the upload: ask for its offset with HEAD.",
            ) from None
        except BaseException:
            write_claim.release()
            raise
        kept = got.written if got.checksum_ok else 0
        if not commit(write_claim, offset, kept, upload.length):
            raise self.refusal(request, upload.pk, offset + kept)
        if offset + kept == upload.length:
            self.finish(request, upload.pk, write_claim)
        if not got.checksum_ok and got.whole:
            raise protocol.checksum_mismatch(checksum[0])
        return self.owned(request, upload.pk)

    def finish(self, request, upload_id: str, write_claim) -> None:
        try:
            finish(Upload.objects.select_related("owner").get(pk=upload_id), write_claim)
        except (BytesMissing, Upload.DoesNotExist):
            raise bytes_gone() from None
        if not Upload.objects.filter(pk=upload_id, finished_at__isnull=False).exists():
            # Not finished, and nobody else did it: its deadline came first.
            raise self.refusal(request, upload_id, None)

    # What a client may do, and to whose uploads: the API's owner here; a
    # link that collects files says otherwise (collect.tus).

    def uploads_of(self, request):
        """The uploads this client may see, write and terminate."""
        return Upload.objects.filter(owner=request.user)

    def uploader(self, request):
        """Who owns the uploads this client creates."""
        return request.user

    def set_aside(self, request, upload: Upload) -> None:
        """Inside the creating transaction: the space the upload will take,
        reserved (QuotaExceeded refuses it)."""
        quotas.reserve(upload.owner_id, upload.length)

    def deadline(self, request, now):
        """(expires_at, ends_by) of an upload created at `now`."""
        return now + expires_after(), None

    def upload_url(self, request, upload_id: str) -> str:
        return request.build_absolute_uri(reverse("tus-upload", args=[upload_id]))

    def progress_headers(self, upload: Upload) -> dict[str, str]:
        headers = {
            "Upload-Offset": str(upload.offset),
            "Upload-Expires": protocol.expires_header(upload.expires_at),
            "Upload-Limit": protocol.upload_limit(least_chunk(upload.length), settings.TUS_MAX_CHUNK_BYTES),
        }
        if upload.file_id is not None:
            headers[protocol.UPLOAD_FILE_HEADER] = reverse("file-detail", args=[upload.file_id])
        return headers

    def owned(self, request, upload_id: str) -> Upload:
        upload = self.uploads_of(request).filter(pk=upload_id).first()
        if upload is None:
            raise NotFound("No such upload among yours.")
        return upload

    def refusal(self, request, upload_id: str, offset: int | None) -> TusError:
        """Why a claim at `offset` (or a finish) failed, read after the fact."""
        upload = self.owned(request, upload_id)
        if not upload.is_open(timezone.now()):
            return gone(upload)
        if offset is not None and upload.offset != offset:
            return TusError(
                status.HTTP_409_CONFLICT,
                f"Upload-Offset is {offset} but the upload is at {upload.offset}: resume from there.",
            )
        return TusError(
            status.HTTP_409_CONFLICT,
            "Another request is writing to this upload: ask for its offset with HEAD and resume from there.",
        )


def bytes_gone() -> TusError:
    return TusError(status.HTTP_410_GONE, "The upload's bytes are gone; start it again.")


def gone(upload: Upload) -> TusError:
    return TusError(status.HTTP_410_GONE, f"The upload expired at {protocol.expires_header(upload.expires_at)}.")


@extend_schema(exclude=True)
class UploadCollectionView(TusView):
    def post(self, request, **route):
        if "Upload-Defer-Length" in request.headers:
            raise protocol.bad_header("Upload-Defer-Length", "is not supported: send Upload-Length.")
        length = protocol.whole_number(request, "Upload-Length")
        if length is None:
            raise protocol.bad_header("Upload-Length", "is required (the file's size in bytes).")
        upload = self.described(request, length)
        size, checksum = self.chunk_rules(request)
        if size:
            protocol.require_offset_stream(request)
            if size > length:
                raise protocol.past_the_end(0, size, length)
            self.chunk_fits(request, 0, size, length)
        create_partial_file(upload.pk)
        try:
            with transaction.atomic():
                # The whole length set aside now: a client learns at once that
                # the file will not fit, not after sending every byte.
                self.set_aside(request, upload)
                upload.save(force_insert=True)
                transaction.on_commit(
                    partial(upload_created.send, sender=Upload, upload_id=upload.pk, expires_at=upload.expires_at)
                )
        except QuotaExceeded as refused:
            discard_partial_file(upload.pk)
            raise TusError(status.HTTP_413_REQUEST_ENTITY_TOO_LARGE, refused.messages[0]) from None
        except BaseException:
            discard_partial_file(upload.pk)
            raise
        location = {"Location": self.upload_url(request, upload.pk)}
        if size:
            try:
                upload = self.append(request, upload, 0, size, checksum)
            except TusError as error:
                error.headers.update(location)  # the upload exists: the client resumes it there
                raise
        return Response(status=status.HTTP_201_CREATED, headers={**location, **self.progress_headers(upload)})

    def described(self, request, length: int) -> Upload:
        """A new upload as Upload-Length and Upload-Metadata describe it,
        checked by the rules every upload follows (check_upload)."""
        metadata = protocol.parse_metadata(request.headers.get("Upload-Metadata"))
        name = clean_file_name(protocol.metadata_text(metadata, "filename"))
        stand_in = Described(name, length, protocol.metadata_text(metadata, "filetype") or "")
        try:
            check_upload(stand_in)
        except UploadTooLarge as exc:
            raise TusError(status.HTTP_413_REQUEST_ENTITY_TOO_LARGE, exc.messages[0]) from None
        except ValidationError as exc:
            where = "Upload-Metadata filetype: " if exc.code != "empty" else ""
            raise TusError(status.HTTP_400_BAD_REQUEST, where + exc.messages[0]) from None
        ephemeral = protocol.metadata_text(metadata, "delete_when_unshared")
        try:
            ephemeral = serializers.BooleanField().to_internal_value(ephemeral) if ephemeral is not None else False
        except serializers.ValidationError:
            raise protocol.bad_header("Upload-Metadata", "delete_when_unshared must be true or false.") from None
        now = timezone.now()
        expires_at, ends_by = self.deadline(request, now)
        return Upload(
            owner=self.uploader(request),
            length=length,
            metadata=metadata,
            filename=name,
            content_type=stand_in.content_type,
            delete_when_unshared=ephemeral,
            created_at=now,
            expires_at=expires_at,
            ends_by=ends_by,
        )


class Described:
    """What check_upload reads of an upload, known before its bytes."""

    def __init__(self, name: str, size: int, content_type: str):
        self.name, self.size, self.content_type = name, size, content_type


@extend_schema(exclude=True)
class UploadView(TusView):
    def head(self, request, upload_id, **route):
        upload = self.owned(request, upload_id)
        now = timezone.now()
        if not upload.is_open(now):
            raise gone(upload)
        if upload.offset == upload.length and not upload.finished:
            # Complete but not finished: its finisher died. Finish it here
            # (unless one is at it now), or the client would never learn the file.
            write_claim = claim(upload.pk, upload.owner_id, upload.length)
            if write_claim is not None:
                self.finish(request, upload.pk, write_claim)
                upload = self.owned(request, upload_id)
        headers = {**self.progress_headers(upload), "Upload-Length": str(upload.length), "Cache-Control": "no-store"}
        if upload.metadata:
            headers["Upload-Metadata"] = protocol.metadata_header(upload.metadata)
        return Response(status=status.HTTP_200_OK, headers=headers)

    def patch(self, request, upload_id, **route):
        protocol.require_offset_stream(request)
        offset = protocol.whole_number(request, "Upload-Offset")
        if offset is None:
            raise protocol.bad_header("Upload-Offset", "is required (where this chunk starts in the file).")
        size, checksum = self.chunk_rules(request)
        upload = self.owned(request, upload_id)
        if not upload.is_open(timezone.now()):
            raise gone(upload)
        if offset != upload.offset:
            raise self.refusal(request, upload_id, offset)
        if offset + size > upload.length:
            raise protocol.past_the_end(offset, size, upload.length)
        self.chunk_fits(request, offset, size, upload.length)
        if size or (upload.offset == upload.length and not upload.finished):
            upload = self.append(request, upload, offset, size, checksum)
        return Response(status=status.HTTP_204_NO_CONTENT, headers=self.progress_headers(upload))

    def delete(self, request, upload_id, **route):
        remove_upload(self.owned(request, upload_id))
        return Response(status=status.HTTP_204_NO_CONTENT)
