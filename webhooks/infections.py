"""Deliveries of a file found infected by its malware scan ("file.infected").

Written in the transaction that records the verdict (scanning's
file_infected signal), like an arrival's: a verdict that commits has its
deliveries, one that rolls back has none. The shares it ended have their
own events ("infected") through the outbox; this one reaches an owner
whose file was not shared too.
"""

from django.dispatch import receiver
from django.utils import timezone

from scanning.signals import file_infected
from webhooks.models import FILE_INFECTED, WebhookDelivery, WebhookEndpoint


def infection_id(file_id: int, endpoint_id: int) -> str:
    """The delivery's webhook-id: one per (file, endpoint), the same on every retry."""
    return f"msg_infected_{file_id}_{endpoint_id}"


def infection_payload(*, file_id: int, name: str, signature: str, share_ids: list[int], at) -> dict:
    stamp = at.isoformat().replace("+00:00", "Z")
    return {
        "type": FILE_INFECTED,
        "timestamp": stamp,
        "data": {"file_id": file_id, "name": name, "signature": signature, "ended_share_ids": share_ids},
    }


@receiver(file_infected, dispatch_uid="webhooks.infections")
def add_infection_deliveries(sender, *, file_id, owner_id, name, signature, share_ids, at, **kwargs) -> None:
    endpoints = WebhookEndpoint.objects.filter(owner_id=owner_id, state=WebhookEndpoint.State.ACTIVE)
    wanted = [endpoint for endpoint in endpoints if FILE_INFECTED in endpoint.events]
    if not wanted:
        return
    now = timezone.now()
    body = infection_payload(file_id=file_id, name=name, signature=signature, share_ids=share_ids, at=at)
    WebhookDelivery.objects.bulk_create(
        WebhookDelivery(
            endpoint=endpoint,
            webhook_id=infection_id(file_id, endpoint.pk),
            payload=body,
            created_at=now,
            next_attempt_at=now,
        )
        for endpoint in wanted
    )
