"""The transactional outbox: deliveries are written with the events they carry.

Every ShareEvent is written inside the transaction of the change it records;
its deliveries (one per active endpoint of the share's owner that wants its
kind) are inserted by one INSERT ... SELECT in that same transaction, so an
event that commits has its deliveries and one that rolls back has none:

- events saved by the models (ShareEvent.record, save_all) reach
  `add_deliveries` through the share_events_saved signal (sharing never
  imports this app);
- the paths that write events in raw SQL (the expiry, the quick downloads)
  take EventDeliveries through sharing.models.outboxes:
  `pg_event_deliveries` joins their data-modifying WITH (PostgreSQL);
  `sqlite_event_mark` and `sqlite_add_deliveries` run on their raw
  connection (SQLite). Their events' share_events_saved then says
  outboxed=True, and add_deliveries leaves them alone.

With no endpoint the INSERT finds nothing to join: an index probe, no write.
"""

from django.db import connections
from django.dispatch import receiver

from sharing.models import Share, ShareEvent
from sharing.models.outboxes import add_event_outbox
from sharing.signals import share_events_saved
from webhooks.models import WebhookDelivery, WebhookEndpoint

DELIVERY = WebhookDelivery._meta.db_table
ENDPOINT = WebhookEndpoint._meta.db_table
SHARE = Share._meta.db_table
EVENT = ShareEvent._meta.db_table
ACTIVE = WebhookEndpoint.State.ACTIVE.value

COLUMNS = "(endpoint_id, event_id, share_id, webhook_id, attempts, created_at, next_attempt_at, last_error)"


def _wants(vendor: str, events_alias: str) -> str:
    """SQL: endpoint `ep` lists the kind of event `events_alias` (a JSON array of strings)."""
    if vendor == "postgresql":
        return f"ep.events @> jsonb_build_array({events_alias}.kind)"
    return f"EXISTS (SELECT 1 FROM json_each(ep.events) wanted WHERE wanted.value = {events_alias}.kind)"


def _insert_select(vendor: str, source: str, where: str = "") -> str:
    """INSERT the deliveries of the events read from `source` (a table or CTE
    aliased e with id, share_id, kind, at). The webhook id is
    models.webhook_id's "msg_<event>_<endpoint>"; ids follow event order."""
    return (
        f"INSERT INTO {DELIVERY} {COLUMNS} "
        f"SELECT ep.id, e.id, e.share_id, 'msg_' || e.id || '_' || ep.id, 0, e.at, e.at, '' "
        f"FROM {source} e JOIN {SHARE} s ON s.id = e.share_id "
        f"JOIN {ENDPOINT} ep ON ep.owner_id = s.owner_id AND ep.state = '{ACTIVE}' AND {_wants(vendor, 'e')} "
        f"{where} ORDER BY e.id, ep.id"
    )


@receiver(share_events_saved, dispatch_uid="webhooks.outbox")
def add_deliveries(sender, events: list[ShareEvent], using: str, outboxed: bool = False, **kwargs) -> None:
    """Insert the deliveries of `events` (just saved, in the caller's
    transaction), unless the statement that saved them did (`outboxed`)."""
    if outboxed:
        return
    ids = [event.pk for event in events if event.pk is not None]
    if not ids:
        return
    connection = connections[using]
    placeholders = ", ".join(["%s"] * len(ids))
    sql = _insert_select(connection.vendor, EVENT, f"WHERE e.id IN ({placeholders})")
    with connection.cursor() as cursor:
        cursor.execute(sql, ids)


def pg_event_deliveries(events_cte: str) -> str:
    """PostgreSQL: a CTE (", deliveries AS (...)") for a data-modifying WITH that
    inserts the deliveries of the rows `events_cte` inserted (it must return
    id, share_id, kind, at). Part of the same statement, so atomic with it."""
    return f", webhook_deliveries AS ({_insert_select('postgresql', events_cte)})"


def sqlite_event_mark(raw) -> int | None:
    """SQLite, inside the transaction of the expiry or a batch of downloads, before its events are
    inserted: the last event id so far, or None when no endpoint is active
    (then there is nothing to deliver and nothing more to do)."""
    if raw.execute(f"SELECT 1 FROM {ENDPOINT} WHERE state = ? LIMIT 1", [ACTIVE]).fetchone() is None:
        return None
    return raw.execute(f"SELECT COALESCE(MAX(id), 0) FROM {EVENT}").fetchone()[0]


def sqlite_add_deliveries(raw, after_event_id: int) -> None:
    """SQLite: insert the deliveries of the events inserted after `after_event_id`
    (the same transaction holds the write lock, so they are exactly its own)."""
    raw.execute(_insert_select("sqlite", EVENT, "WHERE e.id > ?"), [after_event_id])


class EventDeliveries:
    """The outbox's part in the statements that write events in raw SQL
    (sharing.models.outboxes)."""

    postgres_cte = staticmethod(pg_event_deliveries)
    sqlite_mark = staticmethod(sqlite_event_mark)
    sqlite_add = staticmethod(sqlite_add_deliveries)


add_event_outbox(EventDeliveries)
