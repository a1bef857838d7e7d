"""Deliveries of upload requests' arrivals ("upload_request.file_received").

Written in the transaction in which the file arrives (collect's
file_arriving signal), like a share event's deliveries in the outbox: an
arrival that commits has its deliveries, one that rolls back has none. They
carry their body from the start (no ShareEvent row), and no share: the
worker keeps no order between them.
"""

from django.dispatch import receiver
from django.utils import timezone

from collect.models import ReceivedFile
from collect.signals import file_arriving
from webhooks.models import FILE_RECEIVED, WebhookDelivery, WebhookEndpoint


def arrival_id(received_id: int, endpoint_id: int) -> str:
    """The delivery's webhook-id: one per (arrival, endpoint), the same on every retry."""
    return f"msg_arrival_{received_id}_{endpoint_id}"


def arrival_payload(received: ReceivedFile, at) -> dict:
    return {
        "type": FILE_RECEIVED,
        "timestamp": at.isoformat().replace("+00:00", "Z"),
        "data": {
            "upload_request_id": received.request_id,
            "received_id": received.pk,
            "name": received.name,
            "size": received.size,
            "file_id": received.file_id,
            "received_at": at.isoformat().replace("+00:00", "Z"),
        },
    }


@receiver(file_arriving, dispatch_uid="webhooks.arrivals")
def add_arrival_deliveries(sender, received: ReceivedFile, **kwargs) -> None:
    owner_id = ReceivedFile.objects.filter(pk=received.pk).values_list("request__owner_id", flat=True).first()
    endpoints = WebhookEndpoint.objects.filter(owner_id=owner_id, state=WebhookEndpoint.State.ACTIVE)
    wanted = [endpoint for endpoint in endpoints if FILE_RECEIVED in endpoint.events]
    if not wanted:
        return
    now = timezone.now()
    body = arrival_payload(received, received.finished_at or now)
    WebhookDelivery.objects.bulk_create(
        WebhookDelivery(
            endpoint=endpoint,
            webhook_id=arrival_id(received.pk, endpoint.pk),
            payload=body,
            created_at=now,
            next_attempt_at=now,
        )
        for endpoint in wanted
    )
