"""The REST API: files and shares, each scoped to the requesting user.

Views only route: serializers parse, the models decide. Another user's file or
share is never looked up at all (get_queryset filters by owner), so it answers
404, exactly like an id that does not exist.
"""

from django.conf import settings
from django.http import FileResponse
from django.utils import timezone
from django.utils.functional import cached_property
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view, inline_serializer
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.decorators import action
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from sharing.exceptions import Conflict, Gone, PayloadTooLarge
from sharing.filters import ShareFilterBackend
from sharing.models import Share, StoredFile
from sharing.serializers import (
    FileUploadSerializer,
    ShareCreateSerializer,
    ShareSerializer,
    ShareUpdateSerializer,
    StoredFileSerializer,
    too_large_message,
)

# Room for the multipart boundaries and part headers around the file itself,
# so a body can be refused from its Content-Length before it is read.
MULTIPART_OVERHEAD_BYTES = 64 * 1024

NOT_FOUND = OpenApiResponse(description="No such id among your own files or shares.")
BAD_REQUEST = OpenApiResponse(description="Invalid input; the body names each offending field.")


class TokenView(ObtainAuthToken):
    """Exchange a username and password for the user's API token."""

    @extend_schema(
        summary="Get your API token",
        description="Send it back as `Authorization: Token <token>` on every other API call.",
        tags=["auth"],
        auth=[],
        request=AuthTokenSerializer,
        responses={
            200: inline_serializer("Token", {"token": serializers.CharField()}),
            400: OpenApiResponse(description="Wrong username or password, or a field is missing."),
        },
    )
    def post(self, request, *args, **kwargs):
        return super().post(request, *args, **kwargs)


class PassthroughContentNegotiation(BaseContentNegotiation):
    """Use the first renderer whatever the Accept header says.

    The download action answers with the file's own bytes and type, so a
    client asking for e.g. application/pdf must not get a 406; errors on that
    action are still rendered as JSON.
    """

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


@extend_schema_view(
    list=extend_schema(summary="List your files", description="Newest first, paginated."),
    retrieve=extend_schema(summary="Show one of your files", responses={200: StoredFileSerializer, 404: NOT_FOUND}),
    destroy=extend_schema(
        summary="Delete a file",
        description=(
            "Delete the file and its bytes. Its active shares become `unshared` with end_reason "
            "`file_deleted`; their records stay."
        ),
        responses={204: None, 404: NOT_FOUND},
    ),
)
class FileViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = StoredFileSerializer
    parser_classes = [MultiPartParser, FormParser]

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation has no user
            return StoredFile.objects.none()
        return StoredFile.objects.filter(owner=self.request.user)

    def get_serializer_class(self):
        return FileUploadSerializer if self.action == "create" else StoredFileSerializer

    @extend_schema(
        summary="Upload a file",
        request={"multipart/form-data": FileUploadSerializer},
        responses={
            201: StoredFileSerializer,
            400: BAD_REQUEST,
            413: OpenApiResponse(description="The file is larger than MAX_UPLOAD_BYTES."),
        },
    )
    def create(self, request, *args, **kwargs):
        # Refuse an obviously oversized body before reading it into a temp file;
        # the exact check on the file's size is the serializer's.
        declared = request.META.get("CONTENT_LENGTH") or ""
        if declared.isdigit() and int(declared) > settings.MAX_UPLOAD_BYTES + MULTIPART_OVERHEAD_BYTES:
            raise PayloadTooLarge(too_large_message())
        return super().create(request, *args, **kwargs)

    def perform_destroy(self, instance):
        instance.delete_with_shares()

    @extend_schema(
        summary="Download one of your files",
        description="The file's bytes as an attachment under its original name.",
        responses={
            (200, "application/octet-stream"): OpenApiResponse(
                OpenApiTypes.BINARY, description="The file, with its own Content-Type."
            ),
            404: NOT_FOUND,
            410: OpenApiResponse(description="The file's bytes are missing from storage."),
        },
    )
    @action(detail=True, methods=["get"], content_negotiation_class=PassthroughContentNegotiation)
    def content(self, request, pk=None):
        stored = self.get_object()
        try:
            handle = stored.content.storage.open(stored.content.name, "rb")
        except OSError:
            raise Gone("The file's content is missing from storage.") from None
        return FileResponse(handle, as_attachment=True, filename=stored.name, content_type=stored.content_type)


@extend_schema_view(
    list=extend_schema(
        summary="List your shares",
        description="Newest first, paginated; filter with ?status= (effective status) and ?file=.",
        responses={200: ShareSerializer(many=True), 400: BAD_REQUEST},
    ),
    retrieve=extend_schema(summary="Show one of your shares", responses={200: ShareSerializer, 404: NOT_FOUND}),
)
class ShareViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = ShareSerializer
    filter_backends = [ShareFilterBackend]

    @cached_property
    def now(self):
        # One clock reading per request: the ?status filter and every share's
        # status in the response agree, even on a page read as a deadline passes.
        return timezone.now()

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation has no user
            return Share.objects.none()
        return Share.objects.filter(owner=self.request.user)

    def get_serializer_class(self):
        if self.action == "create":
            return ShareCreateSerializer
        if self.action == "partial_update":
            return ShareUpdateSerializer
        return ShareSerializer

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "now": self.now}

    @extend_schema(
        summary="Share one of your files",
        description=(
            "Give expires_in (seconds) or expires_at (ISO 8601), or neither for the policy's default lifetime. "
            "A lifetime above the policy's maximum is refused."
        ),
        request=ShareCreateSerializer,
        responses={201: ShareSerializer, 400: BAD_REQUEST},
    )
    def create(self, request):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        share = serializer.save()
        return Response(ShareSerializer(share, context=self.get_serializer_context()).data, status=201)

    @extend_schema(
        summary="Renew or shorten a share",
        description=(
            "Send exactly one of expires_in or expires_at; the maximum lifetime counts from now. "
            "Any other field is refused with a 400."
        ),
        request=ShareUpdateSerializer,
        responses={
            200: ShareSerializer,
            400: BAD_REQUEST,
            404: NOT_FOUND,
            409: OpenApiResponse(description="The share is no longer active (expired or unshared)."),
        },
    )
    def partial_update(self, request, pk=None):
        share = self.get_object()
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        if not share.set_expiry(serializer.validated_data["deadline"]):
            if share.is_servable():
                raise Conflict("The new deadline passed before it could be saved; nothing was changed.")
            raise Conflict(f"The share is {share.effective_status()}; only an active share can be renewed.")
        return Response(ShareSerializer(share, context=self.get_serializer_context()).data)

    @extend_schema(
        summary="Unshare",
        description="End the share now; its record stays. Unsharing a share that already ended changes nothing.",
        responses={204: None, 404: NOT_FOUND},
    )
    def destroy(self, request, pk=None):
        self.get_object().unshare()
        return Response(status=status.HTTP_204_NO_CONTENT)
