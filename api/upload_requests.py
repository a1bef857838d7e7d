"""The upload requests API: each user sees and changes only their own."""

from django.db.models import Prefetch
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from api.upload_request_serializers import (
    UploadRequestCreateSerializer,
    UploadRequestSerializer,
    UploadRequestUpdateSerializer,
)
from collect.ending import close_request, delete_request
from collect.models import ReceivedFile, UploadRequest, request_open_q

NOT_FOUND = OpenApiResponse(description="No such id among your own upload requests.")
BAD_REQUEST = OpenApiResponse(description="Invalid input; the body names each offending field.")
STATES = ["open", "ended"]


@extend_schema_view(
    list=extend_schema(
        summary="List your upload requests",
        description="Newest first, paginated, each with the files that arrived or are arriving through it.",
        parameters=[OpenApiParameter("state", str, enum=STATES, description="Only open, or only ended, requests.")],
    ),
    retrieve=extend_schema(
        summary="Show one of your upload requests", responses={200: UploadRequestSerializer, 404: NOT_FOUND}
    ),
    destroy=extend_schema(
        summary="Delete an upload request",
        description=(
            "Its link stops working at once and its unfinished uploads are removed; "
            "the files that arrived through it stay yours."
        ),
        responses={204: None, 404: NOT_FOUND},
    ),
)
class UploadRequestViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = UploadRequestSerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation has no user
            return UploadRequest.objects.none()
        requests = UploadRequest.objects.filter(owner=self.request.user).prefetch_related(
            Prefetch("received", queryset=ReceivedFile.objects.select_related("file").order_by("started_at", "pk"))
        )
        if self.action == "list":
            requests = self.filter_state(requests)
        return requests

    def filter_state(self, requests):
        state = self.request.query_params.get("state")
        if state is None:
            return requests
        if state not in STATES:
            raise serializers.ValidationError({"state": f"Must be one of: {', '.join(STATES)}."})
        if state == "open":
            return requests.filter(request_open_q(timezone.now()))
        return requests.exclude(request_open_q(timezone.now()))

    @extend_schema(
        summary="Create an upload request",
        description=(
            "A link (`url`) that lets anyone holding it upload files to you, without an account, until "
            "`expires_at` (give expires_in or expires_at; the sharing policy's default lifetime when neither), "
            "within `max_files` and `max_bytes` if given, after giving `password` if set. The files count "
            "against your storage quota and appear in `files` as they arrive."
        ),
        request={"application/json": UploadRequestCreateSerializer},
        responses={201: UploadRequestSerializer, 400: BAD_REQUEST},
    )
    def create(self, request):
        serializer = UploadRequestCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        upload_request = serializer.save(owner=request.user)
        return Response(self.shown(upload_request), status=201)

    @extend_schema(
        summary="Change an upload request's title, note, email notice or password",
        description="Its deadline and limits stay as its uploaders were told: close it and create another.",
        request={"application/json": UploadRequestUpdateSerializer},
        responses={200: UploadRequestSerializer, 400: BAD_REQUEST, 404: NOT_FOUND},
    )
    def partial_update(self, request, pk=None):
        upload_request = self.get_object()
        serializer = UploadRequestUpdateSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        changes = dict(serializer.validated_data)
        if "password" in changes:
            upload_request.set_password(changes.pop("password"))
            changes["password_hash"] = upload_request.password_hash
        if changes:
            UploadRequest.objects.filter(pk=upload_request.pk).update(**changes)
        return Response(self.shown(upload_request))

    @extend_schema(
        summary="Close an upload request now",
        description=(
            "No upload starts, goes on or finishes from now on; unfinished uploads are removed. "
            "Closing an ended request changes nothing."
        ),
        request=None,
        responses={200: UploadRequestSerializer, 404: NOT_FOUND},
    )
    @action(detail=True, methods=["post"])
    def close(self, request, pk=None):
        close_request(self.get_object())
        return Response(self.shown(self.get_object()))

    def destroy(self, request, pk=None):
        delete_request(self.get_object())
        return Response(status=204)

    def shown(self, upload_request: UploadRequest) -> dict:
        fresh = self.get_queryset().get(pk=upload_request.pk)
        return UploadRequestSerializer(fresh, context=self.get_serializer_context()).data
