"""Webhook endpoints (an owner's URL and the event kinds it wants) and the
outbox of deliveries to them.

A delivery row is written in the transaction of the ShareEvent it carries
(webhooks.outbox), so an event that commits has its deliveries and one that
rolls back has none. The worker (webhooks.worker) claims rows with a
conditional UPDATE and a lease (claimed_until), so a worker killed mid-send
loses nothing: the lease lapses and another sends it again, with the same
webhook_id (at least once).
"""

import base64
import secrets

from django.conf import settings
from django.db import models, transaction
from django.db.models import Q
from django.utils import timezone

from sharing.models import ShareEvent

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 24  # Standard Webhooks: between 24 and 64 bytes


def new_secret() -> str:
    """A Standard Webhooks secret: whsec_ and the base64 of random bytes."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def webhook_id(event_id: int, endpoint_id: int) -> str:
    """The delivery's webhook-id: one per (event, endpoint), the same on every retry.
    The daemon's SQL builds the same string (webhooks.fanout)."""
    return f"msg_{event_id}_{endpoint_id}"


class WebhookEndpoint(models.Model):
    class State(models.TextChoices):
        ACTIVE = "active"
        # Deliveries kept failing for WEBHOOK_RETRY_WINDOW: nothing is sent
        # until the owner re-enables it (its pending deliveries are kept).
        FAILING = "failing"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="webhook_endpoints")
    url = models.URLField(max_length=2000)
    events = models.JSONField(help_text="The event kinds sent to this endpoint (valid_event_kinds).")
    secret = models.CharField(max_length=100, default=new_secret, editable=False)
    state = models.CharField(max_length=8, choices=State.choices, default=State.ACTIVE)
    failing_since = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.url} ({self.owner})"

    def reactivate(self) -> None:
        """Send again: the endpoint becomes active and its pending deliveries
        are due now, with a fresh retry window."""
        now = timezone.now()
        with transaction.atomic():
            WebhookEndpoint.objects.filter(pk=self.pk).update(state=self.State.ACTIVE, failing_since=None)
            self.deliveries.filter(delivered_at__isnull=True).update(
                next_attempt_at=now, first_failed_at=None, claimed_until=None
            )
        self.state, self.failing_since = self.State.ACTIVE, None


class WebhookDelivery(models.Model):
    # No single-column index: webhookdelivery_share_idx starts with endpoint.
    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries", db_index=False)
    # The share's event it carries; NULL (and so share_id) for an event that
    # is not a share's, whose body is in `payload` from the start.
    event = models.ForeignKey(ShareEvent, on_delete=models.CASCADE, related_name="+", null=True, blank=True)
    # The event's share: per-share order is kept on (endpoint, share_id).
    share_id = models.BigIntegerField(null=True, blank=True)
    webhook_id = models.CharField(max_length=64, unique=True)
    # The body as first sent, kept so every retry sends the same bytes.
    payload = models.JSONField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    # A worker's lease: the row is its own until then.
    claimed_until = models.DateTimeField(null=True, blank=True)
    first_failed_at = models.DateTimeField(null=True, blank=True, help_text="Start of the current run of failures.")
    delivered_at = models.DateTimeField(null=True, blank=True)
    last_status = models.PositiveSmallIntegerField(null=True, blank=True, help_text="HTTP status of the last attempt.")
    last_error = models.CharField(max_length=500, blank=True, default="")

    class Meta:
        ordering = ["-id"]
        verbose_name_plural = "webhook deliveries"
        constraints = [models.UniqueConstraint(fields=["endpoint", "event"], name="webhookdelivery_endpoint_event")]
        indexes = [
            # The worker's scan: pending rows by due time.
            models.Index(
                fields=["next_attempt_at", "id"],
                condition=Q(delivered_at__isnull=True),
                name="webhookdelivery_due_idx",
            ),
            # Per-share order (is an older pending delivery of this share
            # ahead?) and the endpoint's own lookups. Not partial: the only
            # index starting with endpoint, so no planner picks a worse one.
            models.Index(fields=["endpoint", "share_id", "id"], name="webhookdelivery_share_idx"),
        ]

    def __str__(self) -> str:
        return self.webhook_id

    def retry_now(self) -> None:
        WebhookDelivery.objects.filter(pk=self.pk, delivered_at__isnull=True).update(
            next_attempt_at=timezone.now(), claimed_until=None
        )


# Events that are not a share's (webhooks.arrivals, webhooks.infections):
# their deliveries carry their body from the start and no ShareEvent.
FILE_RECEIVED = "upload_request.file_received"
FILE_INFECTED = "file.infected"


def valid_event_kinds() -> list[str]:
    return [str(kind) for kind in ShareEvent.Kind.values] + [FILE_RECEIVED, FILE_INFECTED]
