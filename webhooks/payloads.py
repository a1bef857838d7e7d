"""The body of a delivery: the event as the API shows it, in Standard
Webhooks' {"type", "timestamp", "data"} envelope."""

from api.representations import ShareEventSerializer
from sharing.models import ShareEvent


def event_type(kind: str) -> str:
    return f"share.{kind}"


def payload(event: ShareEvent) -> dict:
    data = ShareEventSerializer(event).data
    return {
        "type": event_type(event.kind),
        "timestamp": data["at"],
        "data": {"share_id": event.share_id, **data},
    }
