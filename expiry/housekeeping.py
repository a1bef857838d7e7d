"""The expiry daemon's lifecycle duties, beside expiring shares.

- Ephemeral files (sharing.models.removal): the files of the shares each
  expiry batch ended (deferred here by the shares_expired receiver) are reaped as soon as the scheduler has nothing due,
  so an ephemeral file whose last share ran out of time leaves the disk
  well within 2 seconds; a sweep every `sweep_interval` seconds (and at
  start) reaps what a crash between an expiry's commit and its reap left.
  Where the daemon's watcher sees every other connection's commit (SQLite:
  `sweeps_after_writes`), a sweep that found nothing to reap or fold is not
  repeated until another connection has written: all it could find comes
  from writes, so an idle daemon does not wake for it.
- Download counts (sharing.models.downloads): at each sweep, the pending
  downloads of unlimited links are folded into their shares' counts, at
  most `batch_size` shares a transaction and `batches_per_pass` a sweep
  (the exact count never waits for this: it adds the pending rows).
- Retention (sharing.models.removal): every `purge_interval` seconds,
  shares that ended longer than the policy's ended_retention ago are purged
  in batches of `batch_size`, at most `batches_per_pass` a pass; a pass that
  ends on a full batch comes back after BACKLOG_PAUSE rather than a whole
  interval, so a backlog drains without one long transaction.
- Bytes left behind (sharing.models.leftovers): at the start of each purge
  pass, up to `batch_size` deleted files' bytes whose deletion failed (a
  storage briefly unreachable) are tried again once their back-off has
  passed; the first failure ends the retries of the pass, so an unreachable
  storage costs one timeout a pass, not one per file.
- Partial bytes left behind (uploads.strays): at the start of a purge pass,
  every STRAY_SWEEP_EVERY seconds, the partial files and bucket objects of
  uploads that have no row any more (a process died between the two) are
  discarded; a failure is logged and left for the next such pass.

Idle cost: the sweep and each reap first ask whether any ephemeral file
exists at all (a raw one-row probe of the partial index of ephemeral files,
~5 us) and run their query (built by the ORM: ~1.5 ms of CPU for the
sweep, several for a reap of thousands of ids) only if one does; the purge is one policy read and one query over the
partial index of ended shares, after a one-row probe of the pending
deletions. The scheduler comes first: this work runs only when no share is due,
and (except pending reaps, which are quick) only when the next deadline is at
least ROOM seconds away, or once it has waited MAX_DEFER for such a gap.
A failure is logged and retried RETRY_DELAY later; it never delays expiry.
"""

import logging
import time
from collections.abc import Callable

from django.db import connections

from expiry.watchers import SAFETY_INTERVAL
from sharing.models import StoredFile, fold_pending, retry_deletions
from sharing.models.removal import defer_expiry_reaps, purge_ended_shares, reap_after_shares, sweep
from storage.errors import StorageUnavailable
from uploads.strays import sweep_strays

logger = logging.getLogger("expiry")

ROOM = 0.05
MAX_DEFER = 5.0
BACKLOG_PAUSE = 1.0
RETRY_DELAY = 5.0
# Reaps of expired shares' files are done this many share ids at a time, at
# most every REAP_EVERY seconds: at 10,000 expiries a second a query after
# every batch cost more CPU than the expiries; well within the 2 s promise.
REAP_CHUNK = 5000
REAP_EVERY = 0.25
# The sweep runs up to one safety look's interval (at most half its own) early
# when the daemon is awake anyway (an idle one wakes every 2 s for that look),
# so it never needs a wake-up of its own.
SWEEP_EARLY = SAFETY_INTERVAL
# A stray listing reads the whole partial folder (a bucket: two listings):
# rare is enough for bytes that a crash left.
STRAY_SWEEP_EVERY = 600.0


class Housekeeper:
    def __init__(
        self,
        *,
        purge_interval: float = 60.0,
        sweep_interval: float = 5.0,
        batch_size: int = 500,
        batches_per_pass: int = 4,
        clock: Callable[[], float] = time.monotonic,
        using: str = "default",
        sweeps_after_writes: bool = False,
    ):
        self.purge_interval = purge_interval
        self.sweep_interval = sweep_interval
        self.batch_size = batch_size
        self.batches_per_pass = batches_per_pass
        self.clock = clock
        self.using = using
        self.sweeps_after_writes = sweeps_after_writes
        self.swept_clean = False  # the last sweep found nothing, and nothing was written since
        start = clock()
        self.next_sweep = start  # at start: whatever a previous run left
        self.next_purge = start
        self.next_reap = start
        self.next_stray_sweep = start
        self._batches_left = batches_per_pass  # in the current purge pass
        self._expired: list[int] = []  # ids of expired shares whose files to reap
        self._stop_deferring = None
        self.sweeps = self.purged = self.reaped = self.folded = self.errors = 0
        self.deleted_late = 0  # bytes deleted on a retry
        self.strays = 0  # removed uploads whose partial bytes a stray sweep discarded

    # --- wiring ------------------------------------------------------------------

    def connect(self) -> "Housekeeper":
        """Take over the reaps of expired shares' files from the shares_expired
        receiver (sharing.models.removal), to batch them."""
        self._stop_deferring = defer_expiry_reaps(self.note_expired)
        return self

    def disconnect(self) -> None:
        if self._stop_deferring is not None:
            self._stop_deferring()
            self._stop_deferring = None

    def note_expired(self, share_ids: list[int]) -> None:
        """Called after each committed expiry statement."""
        self._expired.extend(share_ids)

    def note_written(self) -> None:
        """Called when the watcher saw another connection's commit: what it
        wrote may be for the sweep (a pending download, a file whose reap a
        crash cut short)."""
        self.swept_clean = False

    def _sweep_may_find_work(self) -> bool:
        return not self.swept_clean

    # --- timing ------------------------------------------------------------------

    def seconds_until_next(self, room: float) -> float:
        """How long until step() has work, given `room` seconds until the
        scheduler's next (so that a blocked duty does not spin the loop)."""
        now = self.clock()
        reap_wait = max(0.0, self.next_reap - now) if self._expired else None
        if reap_wait == 0.0:
            return 0.0  # reaps are quick: whatever the room
        wait = (min(self.next_sweep, self.next_purge) if self._sweep_may_find_work() else self.next_purge) - now
        if wait <= 0 and room < ROOM:
            wait += MAX_DEFER
        wait = max(0.0, wait)
        return wait if reap_wait is None else min(wait, reap_wait)

    # --- work --------------------------------------------------------------------

    def step(self, room: float) -> bool:
        """Do one bounded piece of due work; return False when none was.

        `room` is how long until the scheduler has work again."""
        now = self.clock()
        try:
            if self._expired and now >= self.next_reap:
                chunk, self._expired = self._expired[:REAP_CHUNK], self._expired[REAP_CHUNK:]
                self.next_reap = now + (0 if self._expired else REAP_EVERY)
                if self._any_ephemeral_file():  # none: no file of theirs is to be reaped
                    self.reaped += reap_after_shares(chunk, self.using)
                return True
            early = min(SWEEP_EARLY, self.sweep_interval / 2)
            if (
                self._sweep_may_find_work()
                and now >= self.next_sweep - early
                and (room >= ROOM or now >= self.next_sweep + MAX_DEFER)
            ):
                self.next_sweep = now + self.sweep_interval
                self.sweeps += 1
                reaped = 0
                if self._any_ephemeral_file():  # none: nothing the sweep could reap
                    reaped = sweep(self.batch_size, self.using)
                self.reaped += reaped
                folded = self._fold()
                self.swept_clean = self.sweeps_after_writes and not (reaped or folded)
                return True
            if now >= self.next_purge and (room >= ROOM or now >= self.next_purge + MAX_DEFER):
                if self._batches_left == self.batches_per_pass:  # once a pass
                    self._retry_deletions()
                    self._sweep_strays(now)
                self._purge_batch(now)
                return True
        except Exception:
            self.errors += 1
            logger.warning("housekeeping failed; retrying in %.0f s", RETRY_DELAY, exc_info=True)
            self._expired.clear()  # the sweep catches those files
            self.next_sweep = max(self.next_sweep, now + RETRY_DELAY)
            self.next_purge = max(self.next_purge, now + RETRY_DELAY)
            # A dropped or poisoned connection is replaced on the next query.
            connections[self.using].close()
            return True
        return False

    def _fold(self) -> int:
        """Fold pending downloads, a few batches at most; return how many shares."""
        total = 0
        for _ in range(self.batches_per_pass):
            folded = fold_pending(self.batch_size, self.using)
            total += folded
            if folded < self.batch_size:
                break
        self.folded += total
        return total

    def _any_ephemeral_file(self) -> bool:
        connection = connections[self.using]
        table = connection.ops.quote_name(StoredFile._meta.db_table)
        # The bare boolean column matches file_ephemeral_idx's WHERE on both
        # databases; a bound parameter would not let SQLite use the index.
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT 1 FROM {table} WHERE delete_when_unshared LIMIT 1")
            return cursor.fetchone() is not None

    def _retry_deletions(self) -> None:
        deleted = retry_deletions(self.batch_size, self.using)
        self.deleted_late += deleted
        if deleted:
            logger.info("deleted the bytes of %d deleted files on a retry", deleted)

    def _sweep_strays(self, now: float) -> None:
        if now < self.next_stray_sweep:
            return
        self.next_stray_sweep = now + STRAY_SWEEP_EVERY
        try:
            self.strays += sweep_strays(using=self.using)
        except (OSError, StorageUnavailable):
            # Not this pass's purge's business: it goes on.
            logger.warning("sweeping removed uploads' partial bytes failed; trying again later", exc_info=True)

    def _purge_batch(self, now: float) -> None:
        purged = purge_ended_shares(self.batch_size, self.using)
        self.purged += purged
        if purged:
            logger.info("purged %d shares past the retention", purged)
        self._batches_left -= 1
        if purged < self.batch_size:  # nothing more is due
            self.next_purge, self._batches_left = now + self.purge_interval, self.batches_per_pass
        elif not self._batches_left:  # a backlog: more soon, after a pause
            self.next_purge, self._batches_left = now + BACKLOG_PAUSE, self.batches_per_pass
