"""The webhook endpoints API: each user sees and changes only their own."""

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, viewsets
from rest_framework.response import Response

from webhooks.models import WebhookEndpoint
from webhooks.serializers import (
    WebhookEndpointCreatedSerializer,
    WebhookEndpointSerializer,
    WebhookEndpointUpdateSerializer,
)

NOT_FOUND = OpenApiResponse(description="No such id among your own webhook endpoints.")
BAD_REQUEST = OpenApiResponse(description="Invalid input; the body names each offending field.")


@extend_schema_view(
    list=extend_schema(summary="List your webhook endpoints", description="Newest first, paginated."),
    retrieve=extend_schema(
        summary="Show one of your webhook endpoints", responses={200: WebhookEndpointSerializer, 404: NOT_FOUND}
    ),
    destroy=extend_schema(
        summary="Delete a webhook endpoint",
        description="Nothing more is sent to it; its pending deliveries are deleted with it.",
        responses={204: None, 404: NOT_FOUND},
    ),
)
class WebhookEndpointViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet
):
    serializer_class = WebhookEndpointSerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation has no user
            return WebhookEndpoint.objects.none()
        return WebhookEndpoint.objects.filter(owner=self.request.user)

    @extend_schema(
        summary="Register a webhook endpoint",
        description=(
            "Events of your shares whose kind is in `events` are POSTed to `url`, signed as Standard Webhooks "
            "say (webhook-id, webhook-timestamp, webhook-signature). The answer holds the signing `secret`; "
            "it is never shown again. Loopback, private, link-local and multicast addresses are refused."
        ),
        request={"application/json": WebhookEndpointSerializer},
        responses={201: WebhookEndpointCreatedSerializer, 400: BAD_REQUEST},
    )
    def create(self, request):
        serializer = WebhookEndpointSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        endpoint = serializer.save(owner=request.user)
        return Response(WebhookEndpointCreatedSerializer(endpoint).data, status=201)

    @extend_schema(
        summary="Change a webhook endpoint, or re-enable a failing one",
        description=(
            'Send any of url, events, and state "active" (re-enables a failing endpoint; its pending deliveries '
            "are sent again now). The secret cannot be changed: register a new endpoint."
        ),
        request={"application/json": WebhookEndpointUpdateSerializer},
        responses={200: WebhookEndpointSerializer, 400: BAD_REQUEST, 404: NOT_FOUND},
    )
    def partial_update(self, request, pk=None):
        endpoint = self.get_object()
        serializer = WebhookEndpointUpdateSerializer(endpoint, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        changes = {name: value for name, value in serializer.validated_data.items() if name != "state"}
        if changes:
            WebhookEndpoint.objects.filter(pk=endpoint.pk).update(**changes)
        if "state" in serializer.validated_data and endpoint.state != WebhookEndpoint.State.ACTIVE:
            endpoint.reactivate()
        endpoint.refresh_from_db()
        return Response(WebhookEndpointSerializer(endpoint).data)
