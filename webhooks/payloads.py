"""The body of a delivery: the event as the API shows it, in Standard
Webhooks' {"type", "timestamp", "data"} envelope."""

from sharing.models import ShareEvent


def event_type(kind: str) -> str:
    return f"share.{kind}"


def payload(event: ShareEvent) -> dict:
    # Imported at the first delivery (tests/test_layers.py lists it): the
    # expiry daemon sends webhooks, and the API's serializers (DRF and what
    # it imports) would be 18 MB of its memory with no endpoint to send to.
    from api.representations import ShareEventSerializer

    data = ShareEventSerializer(event).data
    return {
        "type": event_type(event.kind),
        "timestamp": data["at"],
        "data": {"share_id": event.share_id, **data},
    }
