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
  transaction (sharing.models.outboxes: the webhooks outbox's deliveries);
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

from django.db import connections
from django.utils.duration import duration_microseconds

from sharing.models.events import ShareEvent
from sharing.models.outboxes import postgres_ctes, sqlite_add_all, sqlite_marks
from sharing.models.shares import Share
from sharing.models.state import EndReason, Status, due_sql
from sharing.signals import shares_expired
from sqlite_writers.poll import begin_immediate


def expire_shares(share_ids: list[int], now: datetime, using: str = "default") -> list[int]:
    """Expire those of `share_ids` still active and due at `now`, stamped
    `now`; return the ids this call expired. Inside a caller's atomic block
    it joins that transaction (its lock held, `now` read under it)."""
    if not share_ids:
        return []
    return _claim(list(share_ids), now, using)


def expire_overdue(now: datetime, limit: int, using: str = "default") -> list[int]:
    """Expire up to `limit` of the shares due at `now`, oldest deadline first,
    straight from the expiry index; return their ids."""
    return _claim(None, now, using, order_limit=limit)


def _claim(share_ids: list[int] | None, now: datetime, using: str, order_limit: int | None = None) -> list[int]:
    connection = connections[using]
    ops = connection.ops
    table = ops.quote_name(Share._meta.db_table)
    stamp = ops.adapt_datetimefield_value(now)
    due, due_params = due_sql(connection, now)
    # updated_at is left alone: it is the last write of an owner or admin,
    # and its index then stays untouched by the daemon (sharing.models.shares).
    set_expired = "SET status = %s, end_reason = %s, ended_at = %s"
    set_params = [Status.EXPIRED, EndReason.EXPIRED, stamp]
    sqlite = connection.vendor == "sqlite"
    if sqlite and share_ids is not None:
        # SQLite, a list of ids: the plain conditional UPDATE, the ids as one
        # JSON array, so every batch runs the same cached statement (a list
        # of placeholders made each length a statement of its own to parse).
        # NOT INDEXED: rowid lookups only; weighing the partial indexes
        # against the bound status made SQLite prepare it again on every run.
        where = f"id IN (SELECT value FROM json_each(%s)) AND {due}"
        sql = f"UPDATE {table} NOT INDEXED {set_expired} WHERE {where}"
        params = [*set_params, _json_ids(share_ids), *due_params]
    else:
        if share_ids is None:
            chosen, chosen_params = due, due_params
        else:
            chosen = f"id IN ({', '.join(['%s'] * len(share_ids))}) AND {due}"
            chosen_params = [*share_ids, *due_params]
        tail = f" ORDER BY expires_at, id LIMIT {int(order_limit)}" if order_limit is not None else ""
        if not sqlite:
            tail += " FOR UPDATE SKIP LOCKED"
        # The outer WHERE repeats the condition: the UPDATE itself decides,
        # whatever the sub-select saw.
        sql = f"UPDATE {table} {set_expired} WHERE id IN (SELECT id FROM {table} WHERE {chosen}{tail}) AND {due}"
        params = [*set_params, *chosen_params, *due_params]
    # Each expiry writes its expired event in the same transaction, from
    # exactly the rows the UPDATE returned: history and state cannot
    # disagree, and a share is expired (and recorded) once.
    if sqlite:
        # The raw connection: Django's cursor wrappers (and atomic()) doubled
        # the CPU of a one-row expiry (~1000 a second when shares fall due
        # together). Inside a caller's atomic block it joins that
        # transaction instead, and on_commit waits for it. The UPDATE
        # returns each event's values as stored (the deadline as text, past
        # the datetime converter; the lateness in microseconds).
        stamp_us = duration_microseconds(now - _EPOCH)
        # (Added after the placeholders become "?": strftime's '%s' is not one.)
        sql = (
            sql.replace("%s", "?")
            + f" RETURNING id, CAST(expires_at AS TEXT), ? - {_stored_microseconds('expires_at')}"
        )
        params.append(stamp_us)
        connection.ensure_connection()
        with connection.wrap_database_errors:  # still django.db errors
            rows = _expire_sqlite(connection, sql, params, (stamp, stamp_us))
    else:
        # PostgreSQL: the UPDATE, the INSERT of its events and the outboxes'
        # rows are one statement (a data-modifying WITH): one round trip, atomic.
        events = ops.quote_name(ShareEvent._meta.db_table)
        added = postgres_ctes("expired_events")
        sql = (
            f"WITH expired AS ({sql} RETURNING id, expires_at), expired_events AS (INSERT INTO {events} "
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
        connection.on_commit(partial(shares_expired.send, sender=Share, share_ids=expired, ended_at=now, using=using))
    return expired


# SQLite's integers: an id outside them is refused outright, as binding it would be.
_SQLITE_INTEGERS = range(-(2**63), 2**63)


def _json_ids(ids: list[int]) -> str:
    if min(ids) not in _SQLITE_INTEGERS or max(ids) not in _SQLITE_INTEGERS:
        raise OverflowError("a share id outside SQLite's integers")
    return json.dumps(ids)


def _expire_sqlite(connection, sql: str, params: list, stamp: tuple[str, int]) -> list[tuple]:
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
            marks = sqlite_marks(raw)
            _insert_sqlite_events(raw, rows, stamp)
            sqlite_add_all(raw, marks)
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
_SQLITE_EVENT_VALUES = (
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


_SQLITE_EVENT_COPY = (
    f"INSERT INTO {ShareEvent._meta.db_table} (share_id, kind, at, expires_at, lateness, user_agent, details) "
    f"SELECT s.id, ?, ?, s.expires_at, ? - {_stored_microseconds('s.expires_at')}, '', '{{}}' "
    f"FROM {Share._meta.db_table} s WHERE s.id IN (SELECT value FROM json_each(?))"
)
_SQLITE_COPY_FROM = 64  # rows; below it, values are cheaper
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EXPIRED = str(ShareEvent.Kind.EXPIRED)


def _insert_sqlite_events(raw, rows: list[tuple], stamp: tuple[str, int]) -> None:
    at, at_us = stamp
    if len(rows) >= _SQLITE_COPY_FROM:
        raw.execute(_SQLITE_EVENT_COPY, [_EXPIRED, at, at_us, json.dumps([row[0] for row in rows])])
        return
    raw.executemany(_SQLITE_EVENT_VALUES, [(i, _EXPIRED, at, deadline, late) for i, deadline, late in rows])
