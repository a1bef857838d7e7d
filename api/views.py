"""The REST API: files and shares, each scoped to the requesting user.

Views only route: serializers parse, the models decide. Another user's file or
share is never looked up at all (get_queryset filters by owner), so it answers
404, exactly like an id that does not exist.
"""

from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import FileResponse
from django.utils import timezone
from django.utils.functional import cached_property
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiResponse,
    extend_schema,
    extend_schema_serializer,
    extend_schema_view,
    inline_serializer,
)
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.decorators import action
from rest_framework.exceptions import APIException, Throttled
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from api.exceptions import Conflict, Gone
from api.filters import ShareFilterBackend
from api.parsers import FormParser
from api.representations import ShareEventSerializer, ShareSerializer
from api.serializers import (
    FileUploadSerializer,
    ShareCreateSerializer,
    ShareReactivateSerializer,
    ShareUpdateSerializer,
    StoredFileSerializer,
)
from ratelimit.logins import LoginRefused, attempt_succeeded, begin_attempt
from sharing.models import (
    ReactivationRefused,
    ScanState,
    Share,
    StoredFile,
    delete_file,
    reactivate,
    refuse_sealed_changes,
)
from signin import second_factor
from storage.disposition import attachment
from tokens import service as tokens

# Share columns ShareSerializer never reads (tests/test_api_representation.py
# makes sure a page of shares is read in one query).
LIST_UNSHOWN = ("owner", "updated_at", "first_download_notified_at", "reminder_sent_at")
NOT_FOUND = OpenApiResponse(description="No such id among your own files or shares.")
BAD_REQUEST = OpenApiResponse(description="Invalid input; the body names each offending field.")


# The name a token made by logging in at POST /api/auth/token/ carries on the tokens page.
LOG_IN_TOKEN_NAME = "Logged in through the API"
SECOND_FACTOR_NEEDED = (
    "This account signs in with a second factor: send its current TOTP code, or a recovery code, as `code` "
    "(an account that must have one and has none sets it up on the web page first)."
)


# Named as DRF's serializer was, so generated clients keep their AuthTokenRequest.
@extend_schema_serializer(component_name="AuthToken")
class TokenRequestSerializer(AuthTokenSerializer):
    code = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=32,
        help_text="The account's current TOTP code, or one of its recovery codes, when it has a second factor.",
    )


class TokenView(ObtainAuthToken):
    """Exchange a username and password (and the second factor's code, for
    an account that has one) for a new API token."""

    serializer_class = TokenRequestSerializer

    @extend_schema(
        summary="Get an API token",
        description=(
            "Send it back as `Authorization: Bearer <token>` (or `Token <token>`) on every other API call. "
            "Each call adds a new token (named on the web page's token list), leaving the others working; "
            "revoke those you no longer use there."
        ),
        tags=["auth"],
        auth=[],
        request={"application/json": TokenRequestSerializer},
        responses={
            200: inline_serializer("Token", {"token": serializers.CharField()}),
            400: OpenApiResponse(
                description="Wrong username or password, a field is missing, or the second factor's code is wrong."
            ),
            429: OpenApiResponse(
                description="Too many attempts from this address, or failed ones for this username; see Retry-After."
            ),
            409: OpenApiResponse(description="You hold as many tokens as allowed; revoke one first."),
            503: OpenApiResponse(description="The attempt counter cannot be reached; retry after Retry-After."),
        },
    )
    def post(self, request, *args, **kwargs):
        username = request.data.get("username", "") if hasattr(request.data, "get") else ""
        try:
            begin_attempt(request, username)
        except LoginRefused as refused:
            raise refusal_error(refused) from None
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        user = serializer.validated_data["user"]
        # A password alone is no way around the second factor the pages ask for.
        code = serializer.validated_data.get("code", "")
        if not second_factor.password_is_enough(user) and not second_factor.code_accepted(user, code):
            raise serializers.ValidationError({"code": [SECOND_FACTOR_NEEDED]})
        attempt_succeeded(request, username)  # reached only when the credentials were right
        try:
            key = tokens.issue(user, name=LOG_IN_TOKEN_NAME)[1]
        except tokens.TooManyTokens as full:
            raise Conflict(
                f"You already hold {full.limit} API tokens, the most allowed: revoke one on the web page first."
            ) from None
        return Response({"token": key})


class LoginsPaused(APIException):
    status_code = 503
    default_code = "logins_paused"


def refusal_error(refused: LoginRefused) -> APIException:
    """The API's answer to a refused log-in: {"detail": ...} with Retry-After."""
    if refused.status == 429:
        # str(): DRF joins the detail with its own words, which a lazy translation is not.
        return Throttled(wait=refused.retry_after, detail=str(refused.message))
    error = LoginsPaused(refused.sentence())
    error.wait = refused.retry_after  # DRF's handler sends it as Retry-After
    return error


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
            413: OpenApiResponse(description="The file is larger than MAX_UPLOAD_BYTES or than your free space."),
        },
    )
    def create(self, request, *args, **kwargs):
        # An oversized Content-Length never gets here (UploadLimitMiddleware
        # refuses it unread); the exact check on the file's size is the serializer's.
        return super().create(request, *args, **kwargs)

    def perform_destroy(self, instance):
        delete_file(instance)

    @extend_schema(
        summary="Download one of your files",
        description="The file's bytes as an attachment under its original name.",
        responses={
            (200, "*/*"): OpenApiResponse(OpenApiTypes.BINARY, description="The file, with its own Content-Type."),
            (200, "application/octet-stream"): OpenApiResponse(
                OpenApiTypes.BINARY,
                description="The file's bytes: any download may be read as bytes.",
            ),
            404: NOT_FOUND,
            409: OpenApiResponse(
                description="The file's malware scan has not cleared it (being checked, too big to scan, or failed)."
            ),
            410: OpenApiResponse(description="The file's bytes are missing from storage, or it was found infected."),
        },
    )
    @action(detail=True, methods=["get"], content_negotiation_class=PassthroughContentNegotiation)
    def content(self, request, pk=None):
        stored = self.get_object()
        # The owner too gets only what its scan cleared: a file that came
        # through an upload request is a stranger's.
        if stored.scan_state == ScanState.INFECTED:
            raise Gone(f"The file was found infected by malware ({stored.scan_signature}); it is not served.")
        if not stored.scan_allows:
            raise Conflict(f"The file's malware scan has not cleared it ({stored.get_scan_state_display()}).")
        try:
            handle = stored.content.storage.open(stored.content.name, "rb")
        except OSError:
            raise Gone("The file's content is missing from storage.") from None
        response = FileResponse(handle, as_attachment=True, filename=stored.name, content_type=stored.content_type)
        response["Content-Disposition"] = attachment(stored.name)
        # The bytes are the uploader's: never run them as a page of this origin.
        response["Content-Security-Policy"] = "sandbox"
        return response


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
        # Each share lists its files (prefetched for the page: one query).
        shares = Share.objects.filter(owner=self.request.user).prefetch_related("items").with_pending_downloads()
        if self.action == "list":
            # Columns no share of a page shows: with 50 shares a page, their
            # conversions were ~15 % of the list's time.
            shares = shares.defer(*LIST_UNSHOWN)
        return shares

    def get_serializer_class(self):
        if self.action == "create":
            return ShareCreateSerializer
        if self.action == "partial_update":
            return ShareUpdateSerializer
        if self.action == "events":
            return ShareEventSerializer
        if self.action == "reactivate":
            return ShareReactivateSerializer
        return ShareSerializer

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "now": self.now}

    @extend_schema(
        summary="Share one of your files",
        description=(
            "Give expires_in (seconds) or expires_at (ISO 8601), or neither for the policy's default lifetime. "
            "A lifetime above the policy's maximum is refused. Optionally max_downloads (the link ends with the "
            "download that uses the last one) and password (asked for by the link, stored hashed)."
        ),
        request={"application/json": ShareCreateSerializer},
        responses={201: ShareSerializer, 400: BAD_REQUEST},
    )
    def create(self, request):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        share = serializer.save()
        return Response(ShareSerializer(share, context=self.get_serializer_context()).data, status=201)

    @extend_schema(
        summary="Change a share: renew or shorten it, set its download limit or password",
        description=(
            "Send at least one of: expires_in or expires_at (not both; the maximum lifetime counts from now), "
            "max_downloads (null lifts the limit; below the downloads already counted is a 400; equal to them "
            "ends the share), password (an empty string removes it). Any other field is refused with a 400."
        ),
        request={"application/json": ShareUpdateSerializer},
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
        changes = serializer.changes()
        try:
            refuse_sealed_changes(share, password=changes["password"], message=changes["message"])
        except DjangoValidationError as refused:
            raise serializers.ValidationError(refused.message_dict) from None
        if not share.change(**changes):
            if share.is_servable():
                raise Conflict("The new deadline passed before it could be saved; nothing was changed.")
            raise Conflict(f"The share is {share.effective_status()}; only an active share can be changed.")
        return Response(ShareSerializer(share, context=self.get_serializer_context()).data)

    @extend_schema(
        summary="Unshare",
        description="End the share now; its record stays. Unsharing a share that already ended changes nothing.",
        responses={204: None, 404: NOT_FOUND},
    )
    def destroy(self, request, pk=None):
        self.get_object().unshare()
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        summary="A share's history",
        description=(
            "Every change of the share, oldest first, paginated: created, renewed (old_expires_at, expires_at), "
            "changed (details), downloaded (a response from byte 0: bytes, client_address, user_agent), "
            "resumed (a response from a later byte, the same fields), "
            "wrong_password, unshared, expired (lateness_ms), download_limit_reached, file_deleted, "
            "reactivated (old_expires_at, expires_at, details). "
            "client_address is kept as the server's EVENT_CLIENT_ADDRESS says (by default the last IPv4 "
            "octet zeroed, IPv6 cut to its first 48 bits; null when not kept)."
        ),
        responses={200: ShareEventSerializer(many=True), 404: NOT_FOUND},
    )
    # No share filters here: ?status or ?file must not make the share itself a 404.
    @action(detail=True, methods=["get"], filter_backends=[])
    def events(self, request, pk=None):
        share = self.get_object()
        page = self.paginate_queryset(share.events.order_by("at", "id"))
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    @extend_schema(
        summary="Reactivate an ended share",
        description=(
            "Bring an expired or unshared share back at the same URL. Give expires_in or expires_at, or neither "
            "for the policy's default lifetime (the maximum lifetime counts from now, as for a new share). "
            "reset_downloads=true counts downloads from zero again; max_downloads sets a new limit (null lifts it). "
            "The password stays as it was. Recorded as a reactivated event."
        ),
        request={"application/json": ShareReactivateSerializer},
        responses={
            200: ShareSerializer,
            400: BAD_REQUEST,
            404: NOT_FOUND,
            409: OpenApiResponse(
                description=(
                    "The share is still active, its file was deleted, or its download limit is used up "
                    "(reset_downloads or a higher max_downloads lets it back)."
                )
            ),
        },
    )
    # No share filters here: ?status or ?file must not make the share itself a 404.
    @action(detail=True, methods=["post"], filter_backends=[])
    def reactivate(self, request, pk=None):
        share = self.get_object()
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            reactivate(share, **serializer.arguments())
        except ReactivationRefused as refused:
            raise Conflict(refused.message, code=refused.code) from None
        return Response(ShareSerializer(share, context=self.get_serializer_context()).data)
