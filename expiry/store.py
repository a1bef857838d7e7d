"""The expiry daemon's only door to the database.

Every read is an indexed query over active shares (see the partial indexes on
Share), and the only writes are the one expiry path's conditional UPDATEs
(sharing.models.expiring): a share is expired only while it is still active
and due, so a share renewed, unshared or whose file was deleted since the
daemon loaded it is left alone, and a share another daemon expired first is
not expired twice. The database decides; the daemon's heap is only a cache
of what it said.

On PostgreSQL the rows are claimed with FOR UPDATE SKIP LOCKED: several daemons
run side by side, and one never waits for rows another is expiring (nor for a
row a web request is writing); it skips them and the scheduler looks again a
little later (~100k rows/s in batches of 500 on the development VM).
"""

from dataclasses import dataclass
from datetime import UTC, datetime

from django.db import connections, models
from django.db.models.expressions import RawSQL

from sharing.models import Share, expire_overdue, expire_shares
from sharing.models.state import DEADLINE_FIELD, STATUS_FIELD, Status, due_q, due_sql
from sharing.rows import field_reader, statement

# SQLite's pick-up re-reads writes this far before the latest it saw. Writes
# commit in updated_at order there (taken under BEGIN IMMEDIATE), so this only
# guards against small clock steps and writers outside a transaction.
PICKUP_OVERLAP = 0.2


def to_datetime(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, UTC)


@dataclass(frozen=True)
class ShareDeadline:
    share_id: int
    expires_at: float  # seconds since the epoch


@dataclass(frozen=True)
class WindowPage:
    deadlines: list[ShareDeadline]
    after: tuple | None  # where the next page starts; None: this page ended the window


# The window's statements, each a range of share_active_expiry_idx
# (expires_at, id) WHERE status = 'active' in its own order, built from the
# rule's parts (sharing.models.state): the status is written in, so the
# planner matches the partial index. Each row also gives
# its deadline as text (CAST): the key a page resumes from, compared exactly
# as stored. A row-value comparison, (expires_at, id) > (?, ?), would be one
# statement, but SQLite ranges over expires_at alone and filters the ids: a
# page deep inside many shares of one deadline (a burst) re-read all of them.
_WINDOW_PARTS = {
    # The window's first page: params until.
    "first": (f"{DEADLINE_FIELD} < %s", f"{DEADLINE_FIELD}, id"),
    # The rest of the last deadline read: params deadline, id.
    "same_deadline": (f"{DEADLINE_FIELD} = %s AND id > %s", "id"),
    # The deadlines after it: params deadline, until.
    "later": (f"{DEADLINE_FIELD} > %s AND {DEADLINE_FIELD} < %s", f"{DEADLINE_FIELD}, id"),
}


def _window_sql(connection, part: str, only: str = "") -> str:
    """A page's statement; `only`: a condition (SQL) a row must meet to be
    wanted, asked of each row of the page (a column), not in the WHERE: a
    page then reads `limit` rows of the index whatever meets it, where a
    filter would read on until `limit` rows met it (all of them when none do)."""
    table = connection.ops.quote_name(Share._meta.db_table)
    condition, order = _WINDOW_PARTS[part]
    # Columns: id, the deadline, its text, whether wanted. SQLite's text is
    # the deadline too: one column fewer, and no driver conversion of every
    # row to a datetime (a third of the page's time, docs/benchmarks.md, "The window in pages").
    deadline = "" if connection.vendor == "sqlite" else f"{DEADLINE_FIELD}, "
    wanted = f", CASE WHEN ({only}) THEN 1 ELSE 0 END AS wanted" if only else ""
    return (
        f"SELECT id, {deadline}CAST({DEADLINE_FIELD} AS TEXT) AS resume_key{wanted} FROM {table} "
        f"WHERE {STATUS_FIELD} = '{Status.ACTIVE}' AND {condition} ORDER BY {order} LIMIT %s"
    )


def _timestamp_reader(connection):
    """Seconds since the epoch from an expires_at as `connection` returns it
    (or as SQLite stores it, text), converted as the ORM would."""
    read = field_reader(connection, Share, "expires_at")
    return lambda value: read(value).timestamp()


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

    def load_window_page(self, until: float, after, limit: int, only: tuple[str, list] | None = None) -> WindowPage:
        """Up to `limit` of the active shares expiring before `until`, in
        (deadline, id) order, from just past `after` (a previous page's
        `after`; None: from the start); `only`: a condition and its
        parameters (the reminders' "owes one"), the page then holding the
        rows of those `limit` that meet it. The order is the partial index's
        own, so a page is one or two range scans that stop after `limit`
        rows, and no row is read twice or skipped at a page boundary, ties
        on the deadline included."""
        connection = self.connection
        end = connection.ops.adapt_datetimefield_value(to_datetime(until))
        only_sql, only_params = only or ("", [])

        def sql(part: str) -> str:
            if only_sql:
                return _window_sql(connection, part, only_sql)
            return statement(connection, _window_sql, part)

        rows = []
        with connection.cursor() as cursor:
            if after is None:
                cursor.execute(sql("first"), [*only_params, end, limit])
                rows = cursor.fetchall()
            else:
                deadline, share_id = after
                cursor.execute(sql("same_deadline"), [*only_params, deadline, share_id, limit])
                rows = cursor.fetchall()
                if len(rows) < limit:
                    cursor.execute(sql("later"), [*only_params, deadline, end, limit - len(rows)])
                    rows += cursor.fetchall()
        timestamp = _timestamp_reader(connection)
        key = 1 if connection.vendor == "sqlite" else 2  # the resume key's column
        deadlines = [ShareDeadline(row[0], timestamp(row[1])) for row in rows if not only_sql or row[-1]]
        resume = (rows[-1][key], rows[-1][0]) if len(rows) == limit else None
        return WindowPage(deadlines, resume)

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
        statement, and return the ids this call expired: the one expiry path,
        sharing.models.expiring.expire_shares, on a connection tuned for it."""
        if not share_ids:
            return []
        self._tune_sqlite()
        return expire_shares(share_ids, to_datetime(now), self.using)

    def expire_overdue(self, now: float, limit: int) -> list[int]:
        """Expire up to `limit` of the active shares due at `now`, oldest
        first, straight from the index; return their ids."""
        self._tune_sqlite()
        return expire_overdue(to_datetime(now), limit, self.using)

    def _tune_sqlite(self) -> None:
        connection = self.connection
        if connection.vendor == "sqlite":
            self._tune(connection)

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
        due, params = due_sql(connection, to_datetime(now))
        sql = f"SELECT id FROM {table} WHERE {due} ORDER BY expires_at, id LIMIT {int(limit)}"
        if connection.vendor == "sqlite":
            self._tune(connection)
            with connection.wrap_database_errors:
                return [row[0] for row in connection.connection.execute(sql.replace("%s", "?"), params)]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return [row[0] for row in cursor.fetchall()]

    def current_deadlines(self, share_ids: list[int]) -> list[ShareDeadline]:
        """Return the deadlines of those of `share_ids` that are still active."""
        rows = self._active().filter(id__in=share_ids).order_by().values_list("id", "expires_at")
        return [ShareDeadline(share_id, expires_at.timestamp()) for share_id, expires_at in rows]

    def overdue_ids(self, now: float, limit: int) -> list[int]:
        """Return up to `limit` ids of active shares due at `now`, oldest first."""
        rows = Share.objects.using(self.using).filter(due_q(to_datetime(now))).order_by("expires_at", "id")
        return list(rows.values_list("id", flat=True)[:limit])
