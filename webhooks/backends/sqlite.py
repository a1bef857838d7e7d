"""SQLite's side of webhooks.backends.

One writer at a time holds the database's lock, so a claim reads first (an
UPDATE would take that lock at every poll), and a transaction's own events
are exactly those inserted after it began.
"""

from webhooks.fanout import ACTIVE, DELIVERY, ENDPOINT, EVENT, insert_select

WANTS = "EXISTS (SELECT 1 FROM json_each(ep.events) wanted WHERE wanted.value = e.kind)"


def outbox_mark(raw) -> int | None:
    """Inside the transaction of the expiry or a batch of downloads, before
    its events are inserted: the last event id so far, or None when no
    endpoint is active (then there is nothing to deliver and nothing more to do)."""
    if raw.execute(f"SELECT 1 FROM {ENDPOINT} WHERE state = ? LIMIT 1", [ACTIVE]).fetchone() is None:
        return None
    return raw.execute(f"SELECT COALESCE(MAX(id), 0) FROM {EVENT}").fetchone()[0]


def outbox_add(raw, after_event_id: int) -> None:
    """Insert the deliveries of the events inserted after `after_event_id`
    (the same transaction holds the write lock, so they are exactly its own)."""
    raw.execute(insert_select(WANTS, EVENT, "WHERE e.id > ?"), [after_event_id])


def claim_pick(cursor, pick: str, params: list) -> str | None:
    """A read first: SQLite's UPDATE takes the one write lock, which an idle
    worker polling every second must not keep taking. None when nothing is due."""
    cursor.execute(pick, params)
    if cursor.fetchone() is None:
        return None
    return pick


# An idle worker ran its claim query (a join) at every poll. With no
# undelivered row at all, nothing can fall due by the clock alone: a new
# delivery needs a commit, and every commit by another connection changes
# this connection's PRAGMA data_version (~5 us to read). So an idle look
# compares the version with the one taken before the last "nothing
# pending" answer, and queries only when it moved (idle daemon: this
# thread 0.036 -> 0.029 % of a core; the rest is the wake-up itself).
# Only for a worker whose connection nobody else writes deliveries
# through: WebhookThread's own.


def _data_version(connection):
    connection.ensure_connection()
    version = connection.connection.execute("PRAGMA data_version").fetchone()[0]
    # Per connection: after a reconnect the number means something else.
    return (id(connection.connection), version)


def idle_mark(connection):
    """The data version when no undelivered row exists, else None."""
    mark = _data_version(connection)  # before the read: a commit after it moves the version
    with connection.cursor() as cursor:
        # webhookdelivery_due_idx is partial on exactly this condition.
        cursor.execute(f"SELECT 1 FROM {DELIVERY} WHERE delivered_at IS NULL LIMIT 1")
        if cursor.fetchone() is None:
            return mark
    return None


def unchanged_since(connection, mark) -> bool:
    """Whether no other connection has committed since `mark` was taken."""
    return _data_version(connection) == mark
