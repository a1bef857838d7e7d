"""Webhook endpoints and their deliveries in the admin.

Deliveries are written by the outbox and the worker only; the admin reads
them and can make pending ones due now ("retry now"), or re-enable a failing
endpoint. The endpoint's secret is never shown.
"""

from django.contrib import admin, messages
from django.db.models import Count, Q
from django.utils import timezone

from webhooks.models import WebhookDelivery, WebhookEndpoint


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin):
    list_display = ["id", "url", "owner", "state", "failing_since", "pending", "created_at"]
    list_filter = ["state"]
    search_fields = ["url", "owner__username"]
    fields = ["owner", "url", "events", "state", "failing_since", "created_at"]
    # Read only: a URL is checked against private targets by the API, where owners change it.
    readonly_fields = fields
    list_select_related = ["owner"]
    actions = ["reenable"]

    def get_queryset(self, request):
        pending = Count("deliveries", filter=Q(deliveries__delivered_at__isnull=True))
        return super().get_queryset(request).annotate(pending_count=pending)

    def has_add_permission(self, request):
        return False  # registered by owners through the API (the secret is shown to them once)

    @admin.display(description="pending deliveries", ordering="pending_count")
    def pending(self, endpoint):
        return endpoint.pending_count

    @admin.action(description="Re-enable (send pending deliveries now)")
    def reenable(self, request, queryset):
        for endpoint in queryset:
            endpoint.reactivate()
        self.message_user(request, f"Re-enabled {len(queryset)} endpoint(s).", messages.SUCCESS)


class DeliveryStateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [("pending", "pending"), ("delivered", "delivered"), ("retrying", "retrying (failed before)")]

    def queryset(self, request, queryset):
        if self.value() == "pending":
            return queryset.filter(delivered_at__isnull=True)
        if self.value() == "delivered":
            return queryset.filter(delivered_at__isnull=False)
        if self.value() == "retrying":
            return queryset.filter(delivered_at__isnull=True, attempts__gt=0)
        return queryset


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    list_display = [
        "webhook_id",
        "endpoint",
        "share_id",
        "kind",
        "attempts",
        "next_attempt_at",
        "delivered_at",
        "last_status",
        "last_error",
    ]
    list_filter = [DeliveryStateFilter, "endpoint__state", "event__kind"]
    search_fields = ["webhook_id", "=share_id", "endpoint__url", "endpoint__owner__username"]
    list_select_related = ["endpoint", "event"]
    actions = ["retry_now"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="event", ordering="event__kind")
    def kind(self, delivery):
        if delivery.event is None:
            return delivery.payload["type"]
        return delivery.event.get_kind_display()

    @admin.action(description="Retry now (pending deliveries become due, claims cleared)")
    def retry_now(self, request, queryset):
        count = queryset.filter(delivered_at__isnull=True).update(next_attempt_at=timezone.now(), claimed_until=None)
        self.message_user(request, f"{count} pending deliveries are due now.", messages.SUCCESS)
