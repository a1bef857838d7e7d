"""The expiry daemon's only door to the database.

Every read is an indexed query over active shares (see the partial indexes on
Share), and the only writes are conditional UPDATEs: a share is expired only
while it is still active and due, so a share renewed, unshared or whose file
was deleted since the daemon loaded it is left alone, and a share another
daemon expired first is not expired twice. The database decides; the daemon's
heap is only a cache of what it said.

On PostgreSQL the rows are claimed with FOR UPDATE SKIP LOCKED: several daemons
run side by side, and one never waits for rows another is expiring (nor for a
row a web request is writing); it skips them and the scheduler looks again a
little later (~100k rows/s in batches of 500 on the reference VM).
"""

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial

from django.db import connections, models, transaction
from django.db.models.expressions import RawSQL
from django.utils.duration import duration_microseconds

from expiry.signals import shares_expired
from expiry.sqlite_lock import begin_immediate
from sharing.models import Share, ShareEvent
from webhooks.outbox import pg_expiry_deliveries, sqlite_add_deliveries, sqlite_event_mark

# SQLite's pick-up re-reads writes this far before the latest it saw. Writes
# commit in updated_at order there (taken under BEGIN IMMEDIATE), so this only
# guards against small clock steps and writers outside a transaction.
PICKUP_OVERLAP = 0.2


def to_datetime(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, UTC)


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


def _insert_sqlite_events(raw, rows: list[tuple], ended_at: datetime) -> None:
    kind, stamp = str(ShareEvent.Kind.EXPIRED), str(ended_at.replace(tzinfo=None))
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


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class ShareDeadline:
    share_id: int
    expires_at: float  # seconds since the epoch


class ShareStore:
    """Reads due shares and expires them, on one database alias."""

    # SQLite allows 32766 bound parameters per statement; PostgreSQL 65535.
    # 5000 ids keep a statement well inside both and a transaction short.
    max_batch = 5000

    def __init__(self, using: str = "default", *, bulk: bool | None = None):
        self.using = using
        self.bulk = bulk  # bursts in one UPDATE; None: where the database allows (SQLite)
        self._tuned = None  # the raw connection whose checkpoints are switched off

    @property
    def connection(self):
        return connections[self.using]

    @property
    def skips_locked_rows(self) -> bool:
        """Whether claims skip rows locked by others (PostgreSQL) rather than wait for them."""
        return self.connection.vendor == "postgresql"

    def _active(self):
        return Share.objects.using(self.using).filter(status=Share.Status.ACTIVE)

    def load_window(self, until: float) -> list[ShareDeadline]:
        """Return the active shares expiring before `until` (index range scan)."""
        # order_by(): no model ordering, so SQLite does not sort the window in a
        # temporary B-tree (12.7 -> 8.3 ms for 10k of 1e6 rows); heapify orders it.
        rows = self._active().filter(expires_at__lt=to_datetime(until)).order_by().values_list("id", "expires_at")
        return [ShareDeadline(share_id, expires_at.timestamp()) for share_id, expires_at in rows.iterator(5000)]

    def change_mark(self, now: float):
        """Return where the next load_changed() must start so that it misses
        nothing committed after this moment (take it before the read it
        follows, e.g. a window load)."""
        if self.connection.vendor == "postgresql":
            return self._snapshot_xmin()
        return now

    def load_changed(self, mark) -> tuple[list, object]:
        """Return the active shares written since `mark` (from change_mark or
        the previous call) and the mark to pass next time.

        SQLite: `mark` is a time. Writers read their clock for updated_at
        holding the database's write lock, so commits come in updated_at
        order; rows at or after `mark` minus PICKUP_OVERLAP (small clock
        steps) are read through the updated_at index.
        PostgreSQL: `mark` is the xmin of an earlier snapshot. A transaction
        still running then has an id at or above it and so does any later
        one, however long it takes to commit or whatever the clocks did;
        rows whose write_xid (a trigger stamps it, see expiry migration 0002)
        is at or above `mark` are read through their partial index.
        """
        if self.connection.vendor == "postgresql":
            next_mark = self._snapshot_xmin()  # before the read: the overlap is what makes it exact
            write_xid = RawSQL(f"{Share._meta.db_table}.write_xid", [], output_field=models.BigIntegerField())
            rows = self._active().alias(write_xid=write_xid).filter(write_xid__gte=mark).order_by()
            found = [ShareDeadline(i, expires_at.timestamp()) for i, expires_at in rows.values_list("id", "expires_at")]
            return found, next_mark
        since = mark - PICKUP_OVERLAP
        rows = self._active().filter(updated_at__gte=to_datetime(since)).order_by()
        latest = mark
        found = []
        for share_id, expires_at, updated_at in rows.values_list("id", "expires_at", "updated_at"):
            latest = max(latest, updated_at.timestamp())
            found.append(ShareDeadline(share_id, expires_at.timestamp()))
        return found, latest

    def _snapshot_xmin(self) -> int:
        with self.connection.cursor() as cursor:
            cursor.execute("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint")
            return cursor.fetchone()[0]

    def expire(self, share_ids: list[int], now: float) -> list[int]:
        """Expire those of `share_ids` still active and due at `now`, in one
        UPDATE, and return the ids this call expired (RETURNING, so the count
        and the ids are exactly this statement's). On PostgreSQL rows locked by
        another transaction are skipped, not waited for."""
        if not share_ids:
            return []
        placeholders = ", ".join(["%s"] * len(share_ids))
        return self._claim(f"id IN ({placeholders})", list(share_ids), now)

    def expire_overdue(self, now: float, limit: int) -> list[int]:
        """Expire up to `limit` of the active shares due at `now`, oldest
        first, straight from the index; return their ids."""
        return self._claim("", [], now, order_limit=limit)

    def _claim(self, id_filter: str, id_params: list, now: float, order_limit: int | None = None) -> list[int]:
        connection = self.connection
        ops = connection.ops
        table = ops.quote_name(Share._meta.db_table)
        stamp = ops.adapt_datetimefield_value(to_datetime(now))
        due = "status = %s AND expires_at <= %s"
        due_params = [Share.Status.ACTIVE, stamp]
        where = f"{id_filter} AND {due}" if id_filter else due
        set_expired = "SET status = %s, end_reason = %s, ended_at = %s, updated_at = %s"
        set_params = [Share.Status.EXPIRED, Share.EndReason.EXPIRED, stamp, stamp]
        if order_limit is None and not self.skips_locked_rows:
            # SQLite, a list of ids: the plain conditional UPDATE.
            sql = f"UPDATE {table} {set_expired} WHERE {where} RETURNING id, expires_at"
            params = [*set_params, *id_params, *due_params]
        else:
            tail = f" ORDER BY expires_at, id LIMIT {int(order_limit)}" if order_limit is not None else ""
            if self.skips_locked_rows:
                tail += " FOR UPDATE SKIP LOCKED"
            # The outer WHERE repeats the condition: the UPDATE itself decides,
            # whatever the sub-select saw.
            sql = f"UPDATE {table} {set_expired} WHERE id IN (SELECT id FROM {table} WHERE {where}{tail}) AND {due}"
            sql += " RETURNING id, expires_at"
            params = [*set_params, *id_params, *due_params, *due_params]
        # Each expiry writes its expired event in the same transaction, from
        # exactly the rows the UPDATE returned: history and state cannot
        # disagree, and a share is expired (and recorded) by one daemon only.
        if connection.vendor == "sqlite":
            self._tune(connection)
            # The raw connection: Django's cursor wrappers (and atomic()) doubled
            # the CPU of a one-row expiry (~1000 a second when shares fall due
            # together). Inside a caller's atomic block it joins that
            # transaction instead, and on_commit waits for it.
            with connection.wrap_database_errors:  # still django.db errors
                rows = self._expire_sqlite(connection, sql.replace("%s", "?"), params, to_datetime(now))
        else:
            # PostgreSQL: the UPDATE and the INSERT of its events are one
            # statement (a data-modifying WITH), so one round trip, atomic.
            events = ops.quote_name(ShareEvent._meta.db_table)
            # The webhooks outbox joins the same statement: each event's
            # deliveries are inserted with it (webhooks.outbox).
            sql = (
                f"WITH expired AS ({sql}), expired_events AS (INSERT INTO {events} "
                f"(share_id, kind, at, expires_at, lateness, user_agent, details) "
                f"SELECT id, %s, %s, expires_at, %s - expires_at, '', '{{}}' FROM expired "
                f"RETURNING id, share_id, kind, at){pg_expiry_deliveries('expired_events')} "
                f"SELECT share_id FROM expired_events"
            )
            params = [*params, ShareEvent.Kind.EXPIRED, stamp, stamp]
            with connection.cursor() as cursor:
                cursor.execute(sql, params)
                rows = cursor.fetchall()
        expired = [row[0] for row in rows]
        if expired:
            transaction.on_commit(
                partial(shares_expired.send, sender=ShareStore, share_ids=expired, ended_at=to_datetime(now)),
                using=self.using,
            )
        return expired

    @staticmethod
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
                # The webhooks outbox: deliveries in the same transaction (None: no endpoint, nothing to add).
                mark = sqlite_event_mark(raw)
                _insert_sqlite_events(raw, rows, ended_at)
                if mark is not None:
                    sqlite_add_deliveries(raw, mark)
        except BaseException:
            if own:
                raw.execute("ROLLBACK")
            raise
        if own:
            raw.execute("COMMIT")
        return rows

    def _tune(self, connection) -> None:
        """Set the daemon's SQLite connection up for many small expiry
        transactions. Checked per connection: a reconnect gets the pragmas again.

        - wal_autocheckpoint = 0: an automatic checkpoint runs inside the
          commit that crosses 1000 WAL pages (every ~200 expiries) and stalls
          it 4-12 ms on two fdatasyncs; expiry.checkpoint.WalCheckpointer does
          them from its own connection instead.
        - temp_store = MEMORY: the expiry UPDATE's RETURNING rows go through a
          temporary table, which with the default (a file) costs every batch
          an open, an unlink and a close of a file in /var/tmp (strace: ~7
          system calls a batch, ~1,700 batches a second at 10,000 expiries a
          second). A batch's rows are a few KB at most (max_batch ids).
        """
        connection.ensure_connection()
        raw = connection.connection
        if raw is not self._tuned:
            raw.execute("PRAGMA wal_autocheckpoint = 0")
            if raw.in_transaction:
                return  # a caller's atomic block: temp_store cannot change in it; next time
            raw.execute("PRAGMA temp_store = MEMORY")
            self._tuned = raw

    @property
    def expires_in_bulk(self) -> bool:
        """Whether a burst reads its due ids first (due_ids) rather than
        popping them from the heap batch by batch: on SQLite. (PostgreSQL's
        daemons share bursts through SKIP LOCKED batches.)"""
        if self.bulk is not None:
            return self.bulk
        return self.connection.vendor == "sqlite"

    def due_ids(self, now: float, limit: int) -> list[int]:
        """Return up to `limit` ids of active shares due at `now`, oldest
        deadline first, read from the expiry index alone (a burst's first
        step; the UPDATEs that follow decide, with their own stamps)."""
        connection = self.connection
        table = connection.ops.quote_name(Share._meta.db_table)
        stamp = connection.ops.adapt_datetimefield_value(to_datetime(now))
        # The status is written into the SQL (a constant of ours, not input)
        # so the planner can match the partial index's WHERE status = 'active'.
        sql = (
            f"SELECT id FROM {table} WHERE status = '{Share.Status.ACTIVE}' AND expires_at <= %s "
            f"ORDER BY expires_at, id LIMIT {int(limit)}"
        )
        if connection.vendor == "sqlite":
            self._tune(connection)
            with connection.wrap_database_errors:
                return [row[0] for row in connection.connection.execute(sql.replace("%s", "?"), [stamp])]
        with connection.cursor() as cursor:
            cursor.execute(sql, [stamp])
            return [row[0] for row in cursor.fetchall()]

    def current_deadlines(self, share_ids: list[int]) -> list[ShareDeadline]:
        """Return the deadlines of those of `share_ids` that are still active."""
        rows = self._active().filter(id__in=share_ids).order_by().values_list("id", "expires_at")
        return [ShareDeadline(share_id, expires_at.timestamp()) for share_id, expires_at in rows]

    def overdue_ids(self, now: float, limit: int) -> list[int]:
        """Return up to `limit` ids of active shares due at `now`, oldest first."""
        rows = self._active().filter(expires_at__lte=to_datetime(now)).order_by("expires_at", "id")
        return list(rows.values_list("id", flat=True)[:limit])
