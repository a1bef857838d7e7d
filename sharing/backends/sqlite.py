"""SQLite's side of sharing.backends.

Statements on the download and expiry paths go to the raw sqlite3
connection: Django's cursor wrappers (their placeholder rewrite, their
hooks, and atomic()) cost more CPU than the short statements themselves.
One writer holds the database's lock at a time, so a transaction's own
rows are exactly those written after it began.

What this backend asks of an outbox's part (sharing.models.outboxes):
outbox_mark(raw), in the writing transaction before its events are
inserted: where they will start, or None when there is nothing to add; and
outbox_add(raw, mark), after the events are inserted, in the same
transaction.
"""

import contextlib
import functools
import json
from datetime import UTC, datetime

from django.utils.duration import duration_microseconds

from sharing.models.events import DOWNLOAD_EVENT_COLUMNS, ShareEvent, download_event_values, insert_download_event
from sharing.models.outboxes import event_outboxes
from sqlite_writers.poll import begin_immediate


@contextlib.contextmanager
def plain_cursor(connection):
    """The raw connection's cursor (`.raw`), taking the same "%s"
    placeholders, its errors still django.db's: the share lookup took
    121 us through Django's cursor and 46 us without. Its statements are
    not in Django's query log (CaptureQueriesContext)."""
    connection.ensure_connection()
    with connection.wrap_database_errors:
        yield _PlainCursor(connection.connection)


class _PlainCursor:
    __slots__ = ("_result", "raw")

    def __init__(self, raw):
        self.raw = raw
        self._result = None

    def execute(self, sql: str, params=()) -> None:
        self._result = self.raw.execute(sql.replace("%s", "?"), params)

    def fetchone(self):
        return self._result.fetchone()

    def fetchall(self):
        return self._result.fetchall()


def _outbox_marks(connection, raw) -> list:
    return [(part, part.outbox_mark(raw)) for part in event_outboxes(connection)]


def _add_outbox_rows(raw, marks: list) -> None:
    for part, mark in marks:
        if mark is not None:
            part.outbox_add(raw, mark)


# --- the expiry ---------------------------------------------------------------


def expire(connection, expiry, share_ids: list[int] | None, order_limit: int | None) -> list[tuple]:
    """Run `expiry` (sharing.models.expiring.Expiry) on the raw connection;
    return the UPDATE's (id, deadline as stored, lateness) rows.

    Inside a caller's atomic block it joins that transaction instead, and
    on_commit waits for it. The UPDATE returns each event's values as
    stored (the deadline as text, past the datetime converter; the lateness
    in microseconds)."""
    if share_ids is not None:
        # A list of ids: the plain conditional UPDATE, the ids as one JSON
        # array, so every batch runs the same cached statement (a list of
        # placeholders made each length a statement of its own to parse).
        # NOT INDEXED: rowid lookups only; weighing the partial indexes
        # against the bound status made SQLite prepare it again on every run.
        where = f"id IN (SELECT value FROM json_each(%s)) AND {expiry.due}"
        sql = f"UPDATE {expiry.table} NOT INDEXED {expiry.set_expired} WHERE {where}"
        params = [*expiry.set_params, _json_ids(share_ids), *expiry.due_params]
    else:
        sql, params = expiry.update_sql(None, order_limit)
    stamp_us = duration_microseconds(expiry.now - _EPOCH)
    # (Added after the placeholders become "?": strftime's '%s' is not one.)
    sql = sql.replace("%s", "?") + f" RETURNING id, CAST(expires_at AS TEXT), ? - {_stored_microseconds('expires_at')}"
    params.append(stamp_us)
    connection.ensure_connection()
    with connection.wrap_database_errors:  # still django.db errors
        return _expire(connection, sql, params, (expiry.stamp, stamp_us))


# SQLite's integers: an id outside them is refused outright, as binding it would be.
_SQLITE_INTEGERS = range(-(2**63), 2**63)


def _json_ids(ids: list[int]) -> str:
    if min(ids) not in _SQLITE_INTEGERS or max(ids) not in _SQLITE_INTEGERS:
        raise OverflowError("a share id outside SQLite's integers")
    return json.dumps(ids)


def _expire(connection, sql: str, params: list, stamp: tuple[str, int]) -> list[tuple]:
    """Run the expiry UPDATE and insert its events in one transaction
    (BEGIN IMMEDIATE on the raw connection unless the caller's atomic
    block has one open); return the UPDATE's (id, deadline, lateness) rows.
    `stamp` is the end's time as stored and in microseconds."""
    raw = connection.connection
    own = not connection.in_atomic_block
    if own:
        begin_immediate(raw, connection.settings_dict["OPTIONS"].get("timeout", 5.0))
    try:
        rows = raw.execute(sql, params).fetchall()
        if rows:
            marks = _outbox_marks(connection, raw)
            _insert_events(raw, rows, stamp)
            _add_outbox_rows(raw, marks)
    except BaseException:
        if own:
            raw.execute("ROLLBACK")
        raise
    if own:
        raw.execute("COMMIT")
    return rows


# The expired events of the rows an UPDATE returned: (id, deadline as
# stored, lateness in microseconds, as Django stores a DurationField). A few
# rows go in as values (executemany: the cheapest statement per expiry when
# shares fall due one by one); a burst's thousands are copied by SQLite itself
# in one INSERT ... SELECT over the ids as one JSON array, which costs a
# statement's setup but no Python per row.
_EVENT_VALUES = (
    f"INSERT INTO {ShareEvent._meta.db_table} (share_id, kind, at, expires_at, lateness, user_agent, details) "
    "VALUES (?, ?, ?, ?, ?, '', '{}')"
)


def _stored_microseconds(column: str) -> str:
    """SQL: a stored datetime `column` (naive UTC text) in microseconds since
    the epoch; whole seconds and the fraction read apart, as SQLite's date
    functions round to milliseconds."""
    return (
        f"(CAST(strftime('%s', substr({column}, 1, 19)) AS INTEGER) * 1000000"
        f" + CAST(substr({column} || '.000000', 21, 6) AS INTEGER))"
    )


@functools.cache
def _event_copy() -> str:
    # Built at first use: the share model is loaded after this module.
    shares = ShareEvent.share.field.related_model._meta.db_table
    return (
        f"INSERT INTO {ShareEvent._meta.db_table} (share_id, kind, at, expires_at, lateness, user_agent, details) "
        f"SELECT s.id, ?, ?, s.expires_at, ? - {_stored_microseconds('s.expires_at')}, '', '{{}}' "
        f"FROM {shares} s WHERE s.id IN (SELECT value FROM json_each(?))"
    )


_COPY_FROM = 64  # rows; below it, values are cheaper
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EXPIRED = str(ShareEvent.Kind.EXPIRED)


def _insert_events(raw, rows: list[tuple], stamp: tuple[str, int]) -> None:
    at, at_us = stamp
    if len(rows) >= _COPY_FROM:
        raw.execute(_event_copy(), [_EXPIRED, at, at_us, json.dumps([row[0] for row in rows])])
        return
    raw.executemany(_EVENT_VALUES, [(i, _EXPIRED, at, deadline, late) for i, deadline, late in rows])


def _events_table(connection) -> str:
    return connection.ops.quote_name(ShareEvent._meta.db_table)


# --- the quick downloads --------------------------------------------------------


class QuickDownloads:
    """A batch of quick downloads in its transaction, which holds the write
    lock: each download by its own statements on the raw connection, the
    outboxes' rows added once for the batch's events."""

    def __init__(self, connection, cursor, download_table: str):
        self.connection = connection
        self.cursor = cursor
        self.download_table = download_table
        self.marks = []

    def begin(self, jobs, share_table: str) -> None:
        """Before any event: the outboxes' marks (the lock is already held)."""
        self.marks = _outbox_marks(self.connection, self.cursor.raw)

    def record(self, job, decided, allowed) -> ShareEvent | None:
        """Decide `job` by its own statement (a pending Download row for a copy
        from byte 0) and insert its event; None when the row may not serve it
        this way."""
        now, stamp = decided
        condition, rule_params = allowed
        cursor = self.cursor
        if job.starts_copy:
            cursor.execute(
                f"INSERT INTO {self.download_table} (share_id, started_at, pending) "
                f"SELECT id, %s, %s {condition} RETURNING id",
                [stamp, True, job.share_id, *rule_params],
            )
        else:
            cursor.execute(f"SELECT id {condition}", [job.share_id, *rule_params])
        if cursor.fetchone() is None:
            return None
        return insert_download_event(
            cursor,
            self.connection,
            job.share_id,
            now,
            visitor=job.visitor,
            size=job.end - job.first,
            kind=job.kind,
            details=job.details,
        )

    def record_event(self, job, decided, exists: str) -> ShareEvent | None:
        """Insert the event of `job` (a QuickEvent) when `exists` (SQL,
        the share's id its parameter) finds its share; None when it is gone."""
        now, stamp = decided
        values = download_event_values(self.connection, visitor=None, size=job.size, kind=job.kind, details=job.details)
        self.cursor.execute(
            f"INSERT INTO {_events_table(self.connection)} ({DOWNLOAD_EVENT_COLUMNS}) "
            f"SELECT %s, %s, %s, %s, %s, %s, %s {exists} RETURNING id",
            [job.share_id, stamp, *values, job.share_id],
        )
        row = self.cursor.fetchone()
        return None if row is None else ShareEvent(pk=row[0], share_id=job.share_id, kind=job.kind, at=now)

    def end(self) -> None:
        """After the batch's events (at least one): the outboxes' rows."""
        _add_outbox_rows(self.cursor.raw, self.marks)
