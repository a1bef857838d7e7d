"""The quick path: downloads of live links without a limit, committed in batches.

A link without a limit (and no first-download notice owed) only has to be
live: a response from byte 0 inserts a *pending* Download row and its
`downloaded` event, a later range only checks and records its event, and
the share's row is never updated, so downloads of a hot link run side by
side (sharing.models.downloads folds the pending rows into download_count).

Downloads that arrive together are written in one transaction
(sqlite_writers.group_commit): on SQLite one turn at the write lock and one
commit for the batch instead of one each, which is what held a hot link
back (docs/benchmarks.md). Each download is still decided by its own
statement, against the time read once the batch holds the lock, and its
response starts only after the batch has committed: an answered download
is in the history before its first byte goes out, whatever happens to the
process afterwards. On PostgreSQL, where round trips are what a download
costs most, each download's row, event and outbox rows are one statement; on
SQLite the batch's statements go to the raw connection (Django's cursor
wrappers cost more CPU than the statements) and the outboxes add their rows
as they do for an expiry (sharing.models.outboxes).
"""

import enum
import threading
from dataclasses import dataclass

from django.db import connections, models, transaction
from django.utils import timezone

from sharing import backends
from sharing.models.events import (
    DOWNLOAD_EVENT_COLUMNS,
    ShareEvent,
    Visitor,
    download_event_values,
    insert_download_event,
)
from sharing.models.outboxes import postgres_ctes, sqlite_add_all, sqlite_marks
from sharing.models.state import servable_sql
from sharing.signals import share_events_saved
from sqlite_writers.group_commit import GroupCommit

# SQL: the row may be counted as a pending download (no limit to keep exact,
# no first-download notice whose claim reads download_count).
QUICK_COUNTABLE = "max_downloads IS NULL AND NOT (notify_first_download AND first_download_notified_at IS NULL)"


class Download(models.Model):
    """One copy of a link without a limit counted by the quick path; pending
    until folded into its share's download_count (downloads.fold_locked)."""

    share = models.ForeignKey("sharing.Share", on_delete=models.CASCADE, related_name="downloads")
    started_at = models.DateTimeField()
    pending = models.BooleanField(default=False, db_default=False)

    class Meta:
        indexes = [
            # The fold's scan and the exact count's subquery read only these rows.
            models.Index(fields=["share"], condition=models.Q(pending=True), name="download_pending_idx"),
        ]

    def __str__(self) -> str:
        return f"download {self.pk} of share {self.share_id}"


class Outcome(enum.Enum):
    ALLOWED = "allowed"  # recorded: send it
    REFUSED = "refused"  # the link may not serve (ended, unshared, past its deadline)
    EXACT = "exact"  # the row has a limit or owes a notice after all: go the exact way


@dataclass(frozen=True)
class QuickDownload:
    """One response asking to send bytes [first, end) of share `share_id`;
    `kind` and `details` are its event's (downloads.Sending says them)."""

    share_id: int
    first: int
    end: int
    starts_copy: bool
    kind: str
    details: str
    visitor: Visitor | None = None


def send_quickly(job: QuickDownload, using: str = "default") -> Outcome:
    """Decide and record `job` in the next batch of this process's downloads.

    Inside a transaction of the caller's, alone and in that transaction: a
    batch must commit by itself, never with a caller's other writes."""
    if connections[using].in_atomic_block:
        return _run_batch(using, lambda: [job])[0]
    return _batches(using).submit(job)


_groups: dict[str, GroupCommit] = {}
_groups_lock = threading.Lock()


def _batches(using: str) -> GroupCommit:
    with _groups_lock:
        group = _groups.get(using)
        if group is None:
            group = _groups[using] = GroupCommit(lambda take: _run_batch(using, take))
        return group


def _run_batch(using: str, take) -> list[Outcome]:
    """One transaction for the downloads take() returns once it holds the lock.

    On PostgreSQL the shares' rows are locked FOR SHARE (in id order):
    downloads hold them together, while an unshare, an expiry or a change
    (FOR NO KEY UPDATE) waits for them and they for it; on SQLite the
    IMMEDIATE transaction holds the write lock. Either way "now" is read once
    the lock is held."""
    connection = connections[using]
    postgres = connection.vendor == "postgresql"
    record = _record_in_one_statement if postgres else _record
    outcomes, events = [], []
    with transaction.atomic(using=using), backends.for_connection(connection).plain_cursor(connection) as cursor:
        jobs = take()
        if postgres:
            _lock_shares(connection, cursor, sorted({job.share_id for job in jobs}))
        else:
            marks = sqlite_marks(cursor.raw)
        now = timezone.now()
        stamp = connection.ops.adapt_datetimefield_value(now)
        servable, rule_params = servable_sql(connection, now)
        share = connection.ops.quote_name(_share_table())
        allowed = (f"FROM {share} WHERE id = %s AND {servable} AND {QUICK_COUNTABLE}", rule_params)
        for job in jobs:
            event = record(cursor, connection, job, (now, stamp), allowed)
            if event is None:
                cursor.execute(f"SELECT {QUICK_COUNTABLE} FROM {share} WHERE id = %s", [job.share_id])
                countable = cursor.fetchone()
                outcomes.append(Outcome.EXACT if countable is not None and not countable[0] else Outcome.REFUSED)
                continue
            events.append(event)
            outcomes.append(Outcome.ALLOWED)
        if events and not postgres:
            sqlite_add_all(cursor.raw, marks)
        if events:
            share_events_saved.send(sender=ShareEvent, events=events, using=using, outboxed=True)
    return outcomes


def _lock_shares(connection, cursor, share_ids: list[int]) -> None:
    """PostgreSQL: lock the rows FOR SHARE, in id order (held when this returns)."""
    placeholders = ", ".join(["%s"] * len(share_ids))
    table = connection.ops.quote_name(_share_table())
    cursor.execute(f"SELECT 1 FROM {table} WHERE id IN ({placeholders}) ORDER BY id FOR SHARE", share_ids)


def _record(cursor, connection, job: QuickDownload, decided, allowed) -> ShareEvent | None:
    """Decide `job` by its own statement (a pending Download row for a copy
    from byte 0) and insert its event; None when the row may not serve it
    this way. The batch's signal has the outboxes add their rows."""
    now, stamp = decided
    condition, rule_params = allowed
    download = connection.ops.quote_name(Download._meta.db_table)
    if job.starts_copy:
        cursor.execute(
            f"INSERT INTO {download} (share_id, started_at, pending) SELECT id, %s, %s {condition} RETURNING id",
            [stamp, True, job.share_id, *rule_params],
        )
    else:
        cursor.execute(f"SELECT id {condition}", [job.share_id, *rule_params])
    if cursor.fetchone() is None:
        return None
    return insert_download_event(
        cursor,
        connection,
        job.share_id,
        now,
        visitor=job.visitor,
        size=job.end - job.first,
        kind=job.kind,
        details=job.details,
    )


def _record_in_one_statement(cursor, connection, job: QuickDownload, decided, allowed) -> ShareEvent | None:
    """PostgreSQL: _record's decision, rows and event, and the outboxes' rows,
    as one data-modifying WITH: one round trip instead of three."""
    now, stamp = decided
    condition, rule_params = allowed
    quote = connection.ops.quote_name
    copy, copy_params = "", []
    if job.starts_copy:
        copy = (
            f"copied AS (INSERT INTO {quote(Download._meta.db_table)} (share_id, started_at, pending) "
            "SELECT id, %s, true FROM allowed), "
        )
        copy_params = [stamp]
    values = download_event_values(
        connection, visitor=job.visitor, size=job.end - job.first, kind=job.kind, details=job.details
    )
    cursor.execute(
        f"WITH allowed AS (SELECT id {condition}), {copy}"
        f"saved AS (INSERT INTO {quote(ShareEvent._meta.db_table)} ({DOWNLOAD_EVENT_COLUMNS}) "
        "SELECT id, %s, %s, %s, %s, %s, %s FROM allowed RETURNING id, share_id, kind, at)"
        f"{postgres_ctes('saved')} SELECT id FROM saved",
        [job.share_id, *rule_params, *copy_params, stamp, *values],
    )
    row = cursor.fetchone()
    return None if row is None else ShareEvent(pk=row[0], share_id=job.share_id, kind=job.kind, at=now)


def _share_table() -> str:
    return Download.share.field.related_model._meta.db_table
