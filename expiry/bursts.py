"""Chunked expiry statements and SQLite bursts, for ExpiryScheduler.

Split from expiry/scheduler.py (one concept per file): how due shares are
turned into statements, not which shares are due.

- Every statement is a chunk of sorted ids, stamped just before it runs and
  committed when it ends, so `ended_at` is never much earlier than the commit
  that made it true (the target is at most 5 ms; docs/benchmarks.md, "Bursts
  and their stamps"); chunk sizes adapt so that a statement takes about CHUNK_TARGET.
- A burst (more than a batch due at once, SQLite) reads its due ids from the
  expiry index first, then expires them chunk by chunk, BURST_STEP at most
  per step.
- An id the database refuses outright is isolated by halving its batch and
  dropped, so it cannot hold the real shares batched with it hostage.

Statements owns the chunk size and the statements; expire_burst asks the
scheduler only through its public methods (pop_due, restore, record_batch,
reschedule_survivors) and the real deadlines it keeps (RealDeadlines).
"""

import logging
import time

from django.db import DataError

logger = logging.getLogger("expiry")

# Each expiry statement is stamped just before it runs and commits when it
# ends, so its length bounds how much earlier than the commit `ended_at` can
# be. Chunks of due shares are sized to take about this long (a 100k burst in
# ~500-id chunks drains as fast as in one transaction, whose stamp preceded
# its commit by 0.26 s), between these sizes.
CHUNK_TARGET = 0.002
MIN_CHUNK, FIRST_CHUNK = 20, 500
# A burst reads at most this many due ids at once (one step), so the daemon
# renews its lease and notices a stop request between pieces of a huge one.
BURST_STEP = 50_000

# What a statement raises for an id no share can have (the database refuses
# the value itself): not transient, so retrying the batch would never succeed.
BAD_ENTRY_ERRORS = (OverflowError, ValueError, TypeError, DataError)


class RealDeadlines:
    """The real deadlines of shares scheduled for a re-check (RECHECK_DELAY
    after the UPDATE skipped them: another transaction held their row), so
    that lateness counts from the deadline, not from the re-check time."""

    def __init__(self):
        self._of: dict[int, float] = {}

    def remember(self, share_id: int, expires_at: float) -> None:
        self._of[share_id] = expires_at

    def forget(self, share_id: int) -> None:
        self._of.pop(share_id, None)

    def clear(self) -> None:
        self._of.clear()

    def take(self, due: list[tuple[float, int]]) -> dict[int, float]:
        """Each popped (expires_at, share_id)'s real deadline by id, forgotten here."""
        pop = self._of.pop
        return {share_id: pop(share_id, expires_at) for expires_at, share_id in due}


class Statements:
    """Expiry statements of adapted size: `size` ids a statement, so that
    one takes about CHUNK_TARGET."""

    def __init__(self, store, clock, stats):
        self.store = store
        self.clock = clock
        self.stats = stats
        self.size = FIRST_CHUNK

    def expire(self, batch: list[int]) -> tuple[list[int], list[int], float]:
        """Expire one chunk in its own statement, stamped just before it
        runs; adapt the chunk size so a statement takes about CHUNK_TARGET.
        Return (expired, dropped, stamp)."""
        stamp = self.clock()
        started = time.perf_counter()
        expired, dropped = self._expire_batch(batch, stamp)
        took = time.perf_counter() - started
        self.stats.worst_stamp_gap = max(self.stats.worst_stamp_gap, took)
        if took > CHUNK_TARGET:
            self.size = max(MIN_CHUNK, int(len(batch) * CHUNK_TARGET / took))
        elif len(batch) >= self.size and took < CHUNK_TARGET / 2:
            self.size = min(self.store.max_batch, self.size * 3 // 2)
        return expired, dropped, stamp

    def _expire_batch(self, batch: list[int], stamp: float) -> tuple[list[int], list[int]]:
        """Expire `batch`; return (expired ids, ids dropped as impossible).

        An id the database refuses outright fails the whole statement; halve
        the batch until it is alone and drop it, so it cannot hold the real
        shares batched with it hostage.
        """
        try:
            return self.store.expire(batch, stamp), []
        except BAD_ENTRY_ERRORS:
            if len(batch) == 1:
                logger.error("dropped share id %r: the database refuses it", batch[0], exc_info=True)
                return [], list(batch)
        half = len(batch) // 2
        first_expired, first_dropped = self._expire_batch(batch[:half], stamp)
        rest_expired, rest_dropped = self._expire_batch(batch[half:], stamp)
        return first_expired + rest_expired, first_dropped + rest_dropped


def expire_burst(scheduler, first_batch: list[tuple[float, int]]) -> int:
    """Expire the shares due now straight from the database (SQLite):
    read their ids through the expiry index, then expire them in chunks
    of sorted ids, each chunk its own statement with its own stamp. The
    database goes first: popping 100k heap entries takes ~0.1 s that no
    share should wait for. Then drop the heap's due entries and
    reschedule what the database left active (renewed or unshared)."""
    start = scheduler.clock()
    try:
        due_ids = scheduler.store.due_ids(start, BURST_STEP)
    except BaseException:
        scheduler.restore(first_batch)
        raise
    due = first_batch + scheduler.pop_due(start)
    deadline_of = scheduler.real_deadlines.take(due)
    statements = scheduler.statements
    expired_all: set[int] = set()
    pending = sorted(due_ids)
    try:
        while pending:
            batch = pending[: statements.size]
            expired, _dropped, stamp = statements.expire(batch)
            del pending[: len(batch)]
            expired_all.update(expired)
            scheduler.record_batch(expired, deadline_of, stamp)
    except BaseException:
        scheduler.restore([(deadline_of[i], i) for i in deadline_of.keys() - expired_all])
        raise
    left = deadline_of.keys() - expired_all
    if len(due_ids) >= BURST_STEP:
        # The read stopped at its limit: entries it did not reach are
        # still due, and the next step takes them.
        read = set(due_ids)
        scheduler.restore([(deadline_of[i], i) for i in left - read])
        left &= read
    # Left active although due when popped: renewed or unshared meanwhile.
    changed = left
    if changed:
        scheduler.reschedule_survivors(changed, scheduler.clock())
    return len(expired_all)
