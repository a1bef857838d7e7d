"""PostgreSQL's side of sharing.backends.

Round trips are what these paths cost most here: the expiry and each quick
download are one statement each, a data-modifying WITH holding the rows,
their events and the outboxes' rows (atomic with them), and rows are locked
rather than the database.

What this backend asks of an outbox's part (sharing.models.outboxes):
outbox_cte(events_cte), a ", name AS (...)" CTE for a data-modifying WITH,
reading the rows `events_cte` inserted (id, share_id, kind, at).
"""

from sharing.models.events import DOWNLOAD_EVENT_COLUMNS, ShareEvent, download_event_values
from sharing.models.outboxes import event_outboxes


def plain_cursor(connection):
    """Django's own cursor, its statements in the query log."""
    return connection.cursor()


def _outbox_ctes(connection, events_cte: str) -> str:
    return "".join(part.outbox_cte(events_cte) for part in event_outboxes(connection))


def expire(connection, expiry, share_ids: list[int] | None, order_limit: int | None) -> list[tuple]:
    """Run `expiry` (sharing.models.expiring.Expiry), its events and the
    outboxes' rows as one statement; return the expired rows (id first).
    Rows locked by another transaction are skipped, not waited for."""
    sql, params = expiry.update_sql(share_ids, order_limit, " FOR UPDATE SKIP LOCKED")
    events = connection.ops.quote_name(ShareEvent._meta.db_table)
    sql = (
        f"WITH expired AS ({sql} RETURNING id, expires_at), expired_events AS (INSERT INTO {events} "
        f"(share_id, kind, at, expires_at, lateness, user_agent, details) "
        f"SELECT id, %s, %s, expires_at, %s - expires_at, '', '{{}}' FROM expired "
        f"RETURNING id, share_id, kind, at){_outbox_ctes(connection, 'expired_events')} "
        f"SELECT share_id FROM expired_events"
    )
    params = [*params, ShareEvent.Kind.EXPIRED, expiry.stamp, expiry.stamp]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


class QuickDownloads:
    """A batch of quick downloads in its transaction: the shares' rows
    locked FOR SHARE, each download one statement."""

    def __init__(self, connection, cursor, download_table: str):
        self.connection = connection
        self.cursor = cursor
        self.download_table = download_table

    def begin(self, jobs, share_table: str) -> None:
        """Lock the jobs' shares FOR SHARE, in id order (held when this returns):
        downloads hold them together, while an unshare, an expiry or a change
        (FOR NO KEY UPDATE) waits for them and they for it."""
        share_ids = sorted({job.share_id for job in jobs})
        placeholders = ", ".join(["%s"] * len(share_ids))
        self.cursor.execute(
            f"SELECT 1 FROM {share_table} WHERE id IN ({placeholders}) ORDER BY id FOR SHARE", share_ids
        )

    def record(self, job, decided, allowed) -> ShareEvent | None:
        """Decide `job`, insert its Download row (a copy from byte 0), its
        event and the outboxes' rows as one data-modifying WITH: one round
        trip instead of three. None when the row may not serve it this way."""
        now, stamp = decided
        condition, rule_params = allowed
        connection = self.connection
        copy, copy_params = "", []
        if job.starts_copy:
            copy = (
                f"copied AS (INSERT INTO {self.download_table} (share_id, started_at, pending) "
                "SELECT id, %s, true FROM allowed), "
            )
            copy_params = [stamp]
        values = download_event_values(
            connection, visitor=job.visitor, size=job.end - job.first, kind=job.kind, details=job.details
        )
        self.cursor.execute(
            f"WITH allowed AS (SELECT id {condition}), {copy}"
            f"saved AS (INSERT INTO {connection.ops.quote_name(ShareEvent._meta.db_table)} ({DOWNLOAD_EVENT_COLUMNS}) "
            "SELECT id, %s, %s, %s, %s, %s, %s FROM allowed RETURNING id, share_id, kind, at)"
            f"{_outbox_ctes(connection, 'saved')} SELECT id FROM saved",
            [job.share_id, *rule_params, *copy_params, stamp, *values],
        )
        row = self.cursor.fetchone()
        return None if row is None else ShareEvent(pk=row[0], share_id=job.share_id, kind=job.kind, at=now)

    def record_event(self, job, decided, exists: str) -> ShareEvent | None:
        """Insert the event of `job` (a QuickEvent) and the outboxes' rows as
        one statement when `exists` (SQL, the share's id its parameter) finds
        its share, locked FOR SHARE by begin(); None when it is gone."""
        now, stamp = decided
        connection = self.connection
        values = download_event_values(connection, visitor=None, size=job.size, kind=job.kind, details=job.details)
        self.cursor.execute(
            f"WITH saved AS (INSERT INTO {connection.ops.quote_name(ShareEvent._meta.db_table)} "
            f"({DOWNLOAD_EVENT_COLUMNS}) SELECT %s, %s, %s, %s, %s, %s, %s {exists} "
            f"RETURNING id, share_id, kind, at){_outbox_ctes(connection, 'saved')} SELECT id FROM saved",
            [job.share_id, stamp, *values, job.share_id],
        )
        row = self.cursor.fetchone()
        return None if row is None else ShareEvent(pk=row[0], share_id=job.share_id, kind=job.kind, at=now)

    def end(self) -> None:
        """Nothing left: each download's statement wrote the outboxes' rows."""
