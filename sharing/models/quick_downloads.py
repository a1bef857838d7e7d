"""The quick path: downloads of live links without a limit, committed in batches.

A link without a limit (and no first-download notice owed) only has to be
live: a response from byte 0 inserts a *pending* Download row and its
`downloaded` event, a later range only checks and records its event, and
the share's row is never updated, so downloads of a hot link run side by
side (sharing.models.downloads folds the pending rows into download_count).

Downloads that arrive together are written in one transaction
(sqlite_writers.group_commit): on SQLite one turn at the write lock and one
commit for the batch instead of one each, which is what held a hot link
back (docs/benchmarks.md, "Hot link"). Each download is still decided by its own
statement, against the time read once the batch holds the lock, and its
response starts only after the batch has committed: an answered download
is in the history before its first byte goes out, whatever happens to the
process afterwards. A response's delivery receipt, written when it closes
(sharing.models.receipts), joins the same batches as a QuickEvent: the
downloads starting and the responses closing meanwhile share one
transaction. On PostgreSQL, where round trips are what a download
costs most, each download's row, event and outbox rows are one statement; on
SQLite the batch's statements go to the raw connection (Django's cursor
wrappers cost more CPU than the statements) and the outboxes add their rows
as they do for an expiry (sharing.backends).
"""

import enum
from dataclasses import dataclass

from django.db import connections, models, transaction
from django.utils import timezone

from sharing import backends
from sharing.models.events import ShareEvent, Visitor
from sharing.models.scans import scans_allow_sql
from sharing.models.state import servable_sql
from sharing.signals import share_events_saved
from sqlite_writers.group_commit import GroupsPerDatabase

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


@dataclass(frozen=True)
class QuickEvent:
    """An event of share `share_id` written in the next batch, provided the
    share still exists (a delivery receipt): `kind`, the bytes it counts and
    its details as JSON."""

    share_id: int
    kind: str
    size: int
    details: str


def send_quickly(job: QuickDownload | QuickEvent, using: str = "default") -> tuple[Outcome, int | None]:
    """Decide and record `job` in the next batch of this process's downloads;
    return the outcome and, when allowed, the id of its event (a QuickEvent
    is refused only when its share is gone).

    Inside a transaction of the caller's, alone and in that transaction: a
    batch must commit by itself, never with a caller's other writes."""
    if connections[using].in_atomic_block:
        return _run_batch(using, lambda: [job])[0]
    return _batches(using).submit(job)


_batches = GroupsPerDatabase(lambda using, take: _run_batch(using, take))


def _run_batch(using: str, take) -> list[tuple[Outcome, int | None]]:
    """One transaction for the downloads take() returns once it holds the lock.

    The backend holds the shares against an unshare, an expiry or a change
    for the batch (sharing.backends: on PostgreSQL their rows FOR SHARE, on
    SQLite the IMMEDIATE transaction's write lock) before "now" is read."""
    connection = connections[using]
    backend = backends.for_connection(connection)
    quote = connection.ops.quote_name
    outcomes, events = [], []
    with transaction.atomic(using=using), backend.plain_cursor(connection) as cursor:
        jobs = take()
        share = quote(_share_table())
        batch = backend.QuickDownloads(connection, cursor, quote(Download._meta.db_table))
        batch.begin(jobs, share)
        now = timezone.now()
        stamp = connection.ops.adapt_datetimefield_value(now)
        servable, rule_params = servable_sql(connection, now)
        scanned = scans_allow_sql(connection, f"{share}.id")
        allowed = (f"FROM {share} WHERE id = %s AND {servable} AND {scanned} AND {QUICK_COUNTABLE}", rule_params)
        exists = f"WHERE EXISTS (SELECT 1 FROM {share} WHERE id = %s)"
        for job in jobs:
            if isinstance(job, QuickEvent):
                event = batch.record_event(job, (now, stamp), exists)
                if event is not None:
                    events.append(event)
                outcomes.append((Outcome.REFUSED, None) if event is None else (Outcome.ALLOWED, event.pk))
                continue
            event = batch.record(job, (now, stamp), allowed)
            if event is None:
                cursor.execute(f"SELECT {QUICK_COUNTABLE} FROM {share} WHERE id = %s", [job.share_id])
                countable = cursor.fetchone()
                refused = Outcome.EXACT if countable is not None and not countable[0] else Outcome.REFUSED
                outcomes.append((refused, None))
                continue
            events.append(event)
            outcomes.append((Outcome.ALLOWED, event.pk))
        if events:
            batch.end()
            share_events_saved.send(sender=ShareEvent, events=events, using=using, outboxed=True)
    return outcomes


def _share_table() -> str:
    return Download.share.field.related_model._meta.db_table
