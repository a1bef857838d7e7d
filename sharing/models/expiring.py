"""Expiring shares: the one path that ends a share by time.

The expiry daemon (its heap, its catch-up, `runexpiry --once`), a file
deletion that finds a share already past its deadline and a reactivation of
such a share all end it here, with one set of side effects:
- the share's row: one conditional UPDATE of the shares still due (active,
  deadline passed: sharing.models.state.due_sql), so a share renewed,
  unshared or expired by another daemon meanwhile is left alone, and the ids
  it RETURNs are exactly the shares this call expired;
- an expired ShareEvent per share, in the same transaction (lateness is the
  commit's stamp minus the deadline), and whatever other apps add to that
  transaction through add_expiry_outbox (the webhooks outbox's deliveries);
- after the commit, the shares_expired signal with those ids; its receiver in
  sharing.models.removal reaps the ephemeral files of shares that ended.

On PostgreSQL rows locked by another transaction are skipped (FOR UPDATE SKIP
LOCKED), not waited for: several daemons work side by side, and the one that
skipped a row looks again later. The statements are written out: at 10,000
expiries a second the ORM's building of them cost more than running them.
"""

import json
from datetime import UTC, datetime
from functools import partial
from typing import Protocol

from django.db import connections, transaction
from django.utils.duration import duration_microseconds

from sharing.models.events import ShareEvent
from sharing.models.shares import Share
from sharing.models.state import EndReason, Status, due_sql
from sharing.signals import shares_expired
from sqlite_writers.poll import begin_immediate


class ExpiryOutbox(Protocol):
    """SQL another app adds to the expiry's transaction (see add_expiry_outbox)."""

    def postgres_cte(self, events_cte: str) -> str:
        """A ", name AS (...)" CTE for the expiry's data-modifying WITH, reading
        the rows `events_cte` inserted (id, share_id, kind, at)."""

    def sqlite_mark(self, raw):
        """Before the events are inserted: where they will start, or None when
        there is nothing to add."""

    def sqlite_add(self, raw, mark) -> None:
        """After the events are inserted, in the same transaction."""


_outboxes: list[ExpiryOutbox] = []


def add_expiry_outbox(outbox: ExpiryOutbox) -> None:
    """Have `outbox` write its rows in every expiry's transaction (once)."""
    if outbox not in _outboxes:
        _outboxes.append(outbox)


def expire_shares(share_ids: list[int], now: datetime, using: str = "default") -> list[int]:
    """Expire those of `share_ids` still active and due at `now`, stamped
    `now`; return the ids this call expired. Inside a caller's atomic block
    it joins that transaction (its lock held, `now` read under it)."""
    if not share_ids:
        return []
    placeholders = ", ".join(["%s"] * len(share_ids))
    return _claim(f"id IN ({placeholders})", list(share_ids), now, using)


def expire_overdue(now: datetime, limit: int, using: str = "default") -> list[int]:
    """Expire up to `limit` of the shares due at `now`, oldest deadline first,
    straight from the expiry index; return their ids."""
    return _claim("", [], now, using, order_limit=limit)


def _claim(id_filter: str, id_params: list, now: datetime, using: str, order_limit: int | None = None) -> list[int]:
    connection = connections[using]
    ops = connection.ops
    table = ops.quote_name(Share._meta.db_table)
    stamp = ops.adapt_datetimefield_value(now)
    due, due_params = due_sql(connection, now)
    where = f"{id_filter} AND {due}" if id_filter else due
    set_expired = "SET status = %s, end_reason = %s, ended_at = %s, updated_at = %s"
    set_params = [Status.EXPIRED, EndReason.EXPIRED, stamp, stamp]
    skips_locked = connection.vendor == "postgresql"
    if order_limit is None and not skips_locked:
        # SQLite, a list of ids: the plain conditional UPDATE.
        sql = f"UPDATE {table} {set_expired} WHERE {where} RETURNING id, expires_at"
        params = [*set_params, *id_params, *due_params]
    else:
        tail = f" ORDER BY expires_at, id LIMIT {int(order_limit)}" if order_limit is not None else ""
        if skips_locked:
            tail += " FOR UPDATE SKIP LOCKED"
        # The outer WHERE repeats the condition: the UPDATE itself decides,
        # whatever the sub-select saw.
        sql = f"UPDATE {table} {set_expired} WHERE id IN (SELECT id FROM {table} WHERE {where}{tail}) AND {due}"
        sql += " RETURNING id, expires_at"
        params = [*set_params, *id_params, *due_params, *due_params]
    # Each expiry writes its expired event in the same transaction, from
    # exactly the rows the UPDATE returned: history and state cannot
    # disagree, and a share is expired (and recorded) once.
    if connection.vendor == "sqlite":
        # The raw connection: Django's cursor wrappers (and atomic()) doubled
        # the CPU of a one-row expiry (~1000 a second when shares fall due
        # together). Inside a caller's atomic block it joins that
        # transaction instead, and on_commit waits for it.
        connection.ensure_connection()
        with connection.wrap_database_errors:  # still django.db errors
            rows = _expire_sqlite(connection, sql.replace("%s", "?"), params, now)
    else:
        # PostgreSQL: the UPDATE, the INSERT of its events and the outboxes'
        # rows are one statement (a data-modifying WITH): one round trip, atomic.
        events = ops.quote_name(ShareEvent._meta.db_table)
        added = "".join(outbox.postgres_cte("expired_events") for outbox in _outboxes)
        sql = (
            f"WITH expired AS ({sql}), expired_events AS (INSERT INTO {events} "
            f"(share_id, kind, at, expires_at, lateness, user_agent, details) "
            f"SELECT id, %s, %s, expires_at, %s - expires_at, '', '{{}}' FROM expired "
            f"RETURNING id, share_id, kind, at){added} "
            f"SELECT share_id FROM expired_events"
        )
        params = [*params, ShareEvent.Kind.EXPIRED, stamp, stamp]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
    expired = [row[0] for row in rows]
    if expired:
        transaction.on_commit(
            partial(shares_expired.send, sender=Share, share_ids=expired, ended_at=now, using=using), using=using
        )
    return expired


def _expire_sqlite(connection, sql: str, params: list, ended_at: datetime) -> list[tuple]:
    """Run the expiry UPDATE and insert its events in one transaction
    (BEGIN IMMEDIATE on the raw connection unless the caller's atomic
    block has one open); return the UPDATE's (id, expires_at) rows."""
    raw = connection.connection
    own = not connection.in_atomic_block
    if own:
        begin_immediate(raw, connection.settings_dict["OPTIONS"].get("timeout", 5.0))
    try:
        rows = raw.execute(sql, params).fetchall()
        if rows:
            marks = [(outbox, outbox.sqlite_mark(raw)) for outbox in _outboxes]
            _insert_sqlite_events(raw, rows, ended_at)
            for outbox, mark in marks:
                if mark is not None:  # None: nothing to add (e.g. no webhook endpoint)
                    outbox.sqlite_add(raw, mark)
    except BaseException:
        if own:
            raw.execute("ROLLBACK")
        raise
    if own:
        raw.execute("COMMIT")
    return rows


# The expired events of the (id, expires_at) rows an UPDATE returned. A few
# rows go in as values (executemany: the cheapest statement per expiry when
# shares fall due one by one); a burst's thousands are copied by SQLite itself
# in one INSERT ... SELECT over the ids as one JSON array, which costs a
# statement's setup but no Python per row. The deadline goes in as stored
# (naive UTC text); lateness is in microseconds, as Django stores a
# DurationField there.
_SQLITE_EVENT_VALUES = (
    f"INSERT INTO {ShareEvent._meta.db_table} (share_id, kind, at, expires_at, lateness, user_agent, details) "
    "VALUES (?, ?, ?, ?, ?, '', '{}')"
)
# Whole seconds and the fraction read apart: SQLite's date functions round to ms.
_STORED_MICROSECONDS = (
    "(CAST(strftime('%s', substr(s.expires_at, 1, 19)) AS INTEGER) * 1000000"
    " + CAST(substr(s.expires_at || '.000000', 21, 6) AS INTEGER))"
)
_SQLITE_EVENT_COPY = (
    f"INSERT INTO {ShareEvent._meta.db_table} (share_id, kind, at, expires_at, lateness, user_agent, details) "
    f"SELECT s.id, ?, ?, s.expires_at, ? - {_STORED_MICROSECONDS}, '', '{{}}' "
    f"FROM {Share._meta.db_table} s WHERE s.id IN (SELECT value FROM json_each(?))"
)
_SQLITE_COPY_FROM = 64  # rows; below it, values are cheaper
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _insert_sqlite_events(raw, rows: list[tuple], ended_at: datetime) -> None:
    kind, stamp = str(ShareEvent.Kind.EXPIRED), str(ended_at.astimezone(UTC).replace(tzinfo=None))
    stamp_us = duration_microseconds(ended_at - _EPOCH)
    if len(rows) >= _SQLITE_COPY_FROM:
        raw.execute(_SQLITE_EVENT_COPY, [kind, stamp, stamp_us, json.dumps([row[0] for row in rows])])
        return
    values = []
    for share_id, expires_at in rows:
        # Text as stored, unless a converter made it a (naive UTC) datetime.
        deadline = expires_at if isinstance(expires_at, datetime) else datetime.fromisoformat(expires_at)
        lateness = stamp_us - duration_microseconds(deadline.replace(tzinfo=UTC) - _EPOCH)
        values.append((share_id, kind, stamp, str(expires_at), lateness))
    raw.executemany(_SQLITE_EVENT_VALUES, values)
