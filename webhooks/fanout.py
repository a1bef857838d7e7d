"""The tables the outbox and the worker write, and the one INSERT ... SELECT
that fans events out to their deliveries, on every database."""

from sharing.models import Share, ShareEvent
from webhooks.models import WebhookDelivery, WebhookEndpoint

DELIVERY = WebhookDelivery._meta.db_table
ENDPOINT = WebhookEndpoint._meta.db_table
SHARE = Share._meta.db_table
EVENT = ShareEvent._meta.db_table
ACTIVE = WebhookEndpoint.State.ACTIVE.value

COLUMNS = "(endpoint_id, event_id, share_id, webhook_id, attempts, created_at, next_attempt_at, last_error)"


def insert_select(wants: str, source: str, where: str = "") -> str:
    """INSERT the deliveries of the events read from `source` (a table or CTE
    aliased e with id, share_id, kind, at) to the endpoints for which `wants`
    holds (the database's SQL for "endpoint ep lists e's kind",
    webhooks.backends). The webhook id is models.webhook_id's
    "msg_<event>_<endpoint>"; ids follow event order."""
    return (
        f"INSERT INTO {DELIVERY} {COLUMNS} "
        f"SELECT ep.id, e.id, e.share_id, 'msg_' || e.id || '_' || ep.id, 0, e.at, e.at, '' "
        f"FROM {source} e JOIN {SHARE} s ON s.id = e.share_id "
        f"JOIN {ENDPOINT} ep ON ep.owner_id = s.owner_id AND ep.state = '{ACTIVE}' AND {wants} "
        f"{where} ORDER BY e.id, ep.id"
    )
