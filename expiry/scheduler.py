"""The windowed heap scheduler behind `runexpiry`.

It keeps in memory only the active shares that expire before its next
refresh (plus a small overlap), in a heapq of (expires_at, share_id), and
expires each one when it falls due. Where the design comes from (the
reference "seed-style loop") and the figures it rests on are told in docs/
("How shares expire"); what this keeps from that loop and what it does
differently:

- The heap head is heap[0], and every due entry is popped at once, then
  expired in batches of sorted ids with one conditional UPDATE per batch.
- No duplicates: `_scheduled` maps each share to the one deadline it is
  scheduled for. A share seen again with the same deadline is not pushed
  again; one whose deadline changed is pushed anew and its old entry is
  dropped when popped (lazy deletion: heapq cannot remove from the middle).
- Shares written by other processes after a refresh are picked up through a
  watcher: SQLite's data_version or a polling fallback say "something
  changed" and the rows written since the last look are read through an
  index; PostgreSQL NOTIFY payloads (id and deadline) are scheduled as they
  are. A notice never moves an entry later: the earlier one is re-validated
  when it falls due, so notices arriving out of order cannot make a share late.
- A due share the UPDATE skipped because another daemon holds its row lock
  (PostgreSQL) is looked at again RECHECK_DELAY later, not at once: the other
  daemon is expiring it, and retrying at once would spin.
- One step does one bounded piece of work (a batch), so the daemon can renew
  its lease, and stop, between batches of a large burst. How due shares
  become statements (stamped chunks, SQLite bursts) is in expiry/bursts.py.
- A refresh reads its window a page at a time, in deadline order, between
  due batches (expiry.window): a large window never holds up a due share.
- The scheduler never sleeps. It takes its clock as an argument and says how
  long until it next has work (`seconds_until_next`), so its logic is tested
  with a fake clock, and the daemon thread decides how to wait.
"""

import heapq
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from expiry.bursts import RealDeadlines, Statements, expire_burst
from expiry.coalescing import Coalescing
from expiry.notify import valid_deadline
from expiry.reminders import NoReminders
from expiry.rows import NoRows
from expiry.store import ShareDeadline, ShareStore
from expiry.window import (
    WINDOW_OVERLAP,
    WINDOW_PAGE,
    WINDOW_PAGE_MAX,
    WindowLoad,
    policy_default_lifetime,
    refresh_interval_for,
)

logger = logging.getLogger("expiry")

# A due share whose row another transaction holds is looked at again this much
# later: long enough not to spin while another daemon commits its batch (a
# 5000-row batch takes ~50 ms), short enough to matter little if the holder
# was a web request that then left the share due.
RECHECK_DELAY = 0.1


@dataclass
class ExpiryStats:
    expired: int = 0
    batches: int = 0
    caught_up: int = 0
    worst_lateness: float = 0.0  # seconds, over normal (not catch-up) batches
    worst_stamp_gap: float = 0.0  # seconds from a statement's stamp to its commit
    refreshes: int = 0
    pickups: int = 0


class ExpiryScheduler:
    def __init__(
        self,
        store: ShareStore,
        *,
        clock: Callable[[], float] | None = None,
        refresh_interval: float | None = None,
        default_lifetime: Callable[[], timedelta] | None = None,
        watcher=None,
        pickup_interval: float = 0.05,
        batch_size: int | None = None,
        coalesce: float = 0.0,
        coalesce_full_rate: float | None = None,
        reminders=None,
        uploads=None,
        requests=None,
        window_page: int = WINDOW_PAGE,
        window_page_max: int = WINDOW_PAGE_MAX,
    ):
        self.store = store
        self.clock = clock or time.time  # looked up now, so freezegun can stand in
        self.refresh_interval = refresh_interval
        self.default_lifetime = default_lifetime or policy_default_lifetime
        self.watcher = watcher
        self.pickup_interval = pickup_interval
        self.batch_size = batch_size or store.max_batch
        # Timer coalescing: when the head falls due and another share is due
        # within the slack, wait for it and expire both in one statement. A
        # lone share is never delayed. The slack is `coalesce`, or with
        # `coalesce_full_rate` follows the load up to it (expiry.coalescing).
        self.coalescing = Coalescing(coalesce, coalesce_full_rate)
        self.stats = ExpiryStats()
        # Each share's second deadline (its reminder), fed by the same refresh and pick-up.
        self.reminders = reminders if reminders is not None else NoReminders()
        # Resumable uploads' deadlines (expiry.uploads), fed by the same refresh and pick-up.
        self.uploads = uploads if uploads is not None else NoRows()
        # Upload requests' deadlines (expiry.requests), likewise.
        self.requests = requests if requests is not None else NoRows()
        self.statements = Statements(store, self.clock, self.stats)  # their size adapts (expiry.bursts)
        self.window_page = window_page  # rows a refresh reads at a time while a deadline is close
        self.window_page_max = window_page_max  # and at most, while none is
        self._window: WindowLoad | None = None  # the window being read, page by page
        # Set by an expiry batch while a window loads: the next step reads a
        # page, so a steady stream of due shares cannot starve the load.
        self._page_owed = False

        self._heap: list[tuple[float, int]] = []
        self._scheduled: dict[int, float] = {}
        self.caught_up = False
        self.next_refresh = float("-inf")
        self.window_end = float("-inf")  # shares due before this are scheduled
        self.next_pickup = float("-inf")
        self._watermark = None  # where pick-up reads from next (the store's mark)
        # Shares scheduled for a re-check after a skipped claim: their real deadline.
        self.real_deadlines = RealDeadlines()

    def reset(self) -> None:
        """Forget everything scheduled; the next step catches up afresh
        (after this daemon lost, then regained, its lease)."""
        self._heap.clear()
        self._scheduled.clear()
        self.real_deadlines.clear()
        self.caught_up = False
        self.next_refresh = self.window_end = self.next_pickup = float("-inf")
        self._window = None
        self._page_owed = False
        self._watermark = None
        self.reminders.reset()
        self.uploads.reset()
        self.requests.reset()
        if self.watcher is not None:
            self.watcher.take_notices()

    # --- state ---------------------------------------------------------------

    @property
    def coalesce(self) -> float:
        """The most a due share waits for others (seconds)."""
        return self.coalescing.coalesce

    def __len__(self) -> int:
        """The number of shares scheduled (stale heap entries not counted)."""
        return len(self._scheduled)

    @property
    def loading_window(self) -> bool:
        """Whether a refresh's window is still being read, page by page."""
        return self._window is not None

    def scheduled_deadline(self, share_id: int) -> float | None:
        return self._scheduled.get(share_id)

    def schedule(self, share_id: int, expires_at: float) -> bool:
        """Schedule a share for `expires_at`; return whether it was pushed.

        A deadline at or past the window's end is not kept: the refresh that
        covers it will load it, so any earlier entry for the share is stale.
        """
        if not valid_deadline(share_id, expires_at):
            # NaN would sit at the heap head for ever; a huge id would fail
            # every batch it joins. Only a forged notice can bring either.
            logger.warning("refused to schedule share %r at %r", share_id, expires_at)
            return False
        self.reminders.schedule(share_id, expires_at)
        return self._push(share_id, expires_at)

    def _push(self, share_id: int, expires_at: float) -> bool:
        """schedule() without the reminder (a window's page: the reminders'
        own refresh loads theirs)."""
        self.real_deadlines.forget(share_id)
        if expires_at >= self.window_end:
            self._scheduled.pop(share_id, None)
            return False
        if self._scheduled.get(share_id) == expires_at:
            return False
        self._scheduled[share_id] = expires_at
        heapq.heappush(self._heap, (expires_at, share_id))
        return True

    def notice(self, share_id: int, expires_at: float) -> bool:
        """Schedule a share another process announced; never later than an
        entry it already has (the earlier entry is re-validated by the
        database when it falls due and then follows the real deadline)."""
        self.reminders.notice(share_id, expires_at)
        current = self._scheduled.get(share_id)
        if current is not None and current <= expires_at:
            return False
        return self.schedule(share_id, expires_at)

    def seconds_until_next(self) -> float:
        """How long the caller may wait before `step` has work again (or a
        watcher wakes it earlier)."""
        if self.loading_window or self.reminders.loading:
            return 0.0  # more of the window (or of its reminders) to read
        deadline = min(self.next_refresh, self._next_deadline())
        if self.watcher is not None:
            if self.watcher.wants_pickup:
                return 0.0
            deadline = min(deadline, self.next_pickup)
        return max(0.0, deadline - self.clock())

    # --- work ----------------------------------------------------------------

    def step(self) -> bool:
        """Do the most urgent piece of due work; return False when none was due.

        Expiring due shares comes first: a refresh or pick-up query must not
        delay a share that is already due. A refresh reads its window a page
        per step (expiry.window), so a due share waits for one page at most;
        while one loads, pages and due batches take turns.
        """
        if not self.caught_up:
            self.catch_up_batch()
            return True
        now = self.clock()
        watcher = self.watcher
        # Notices before the heap (they cost no query): under a steady stream
        # of due shares there is no idle gap, and a notice left for one made
        # a share created meanwhile seconds late (python -m bench.mixed).
        notices = watcher.take_notices() if watcher is not None else None
        if notices:
            self.stats.pickups += sum(self.notice(share_id, expires_at) for share_id, expires_at in notices)
        window = self._window
        if self._heap and self._wake_time() <= now and not self._page_owed:
            self.expire_due(now, limit=self.batch_size)
            self._page_owed = window is not None or self.reminders.loading
            return True
        if window is not None:
            # Before reminders and the rest: until the window is in, a share
            # due beyond the last one read would be missed.
            self.load_window_page()
            return True
        if self.reminders.loading:
            self.reminders.load_page(room=self._next_deadline() - now)
            self._page_owed = False
            return True
        if notices:
            return True
        if self.reminders.has_due(now):  # expiries first, reminders when none is due
            self.reminders.run_due(now)
            return True
        if self.requests.has_due(now):  # before uploads: ending one removes its uploads
            self.requests.run_due(now)
            return True
        if self.uploads.has_due(now):
            self.uploads.run_due(now)
            return True
        if now >= self.next_refresh:
            self.refresh(now)
            return True
        if watcher is not None and (now >= self.next_pickup or watcher.wants_pickup):
            self.next_pickup = now + watcher.pickup_interval(self.pickup_interval)
            if watcher.changed():
                self.pick_up()
            return True
        return False

    def _next_deadline(self) -> float:
        """When the next share, reminder, upload or request falls due."""
        deadline = min(self.reminders.next_time(), self.uploads.next_time(), self.requests.next_time())
        return min(deadline, self._wake_time()) if self._heap else deadline

    def _wake_time(self) -> float:
        """When the heap head should be expired: at its deadline, or up to
        the slack later when another share falls due within it."""
        heap = self._heap
        head = heap[0][0]
        slack = self.coalescing.slack(head) if self.coalescing.coalesce else 0.0
        if slack:
            # The second smallest entry is one of the head's two children.
            second = min(heap[1][0] if len(heap) > 1 else math.inf, heap[2][0] if len(heap) > 2 else math.inf)
            if second <= head + slack:
                return head + slack
        return head

    def catch_up(self) -> int:
        """Expire everything already overdue (after downtime), straight from
        the database in batches, without loading it into the heap."""
        before = self.stats.caught_up
        self.caught_up = False
        while not self.caught_up:
            self.catch_up_batch()
        return self.stats.caught_up - before

    def catch_up_batch(self) -> int:
        """Expire one batch of overdue shares; a short batch ends the catch-up.

        On PostgreSQL rows other daemons hold are skipped: a batch cut short
        by them also ends it, and the window's refresh schedules what is left.
        """
        expired = self.store.expire_overdue(self.clock(), self.batch_size)
        self.stats.caught_up += len(expired)
        if expired:
            logger.info("caught up: expired %d overdue shares", len(expired))
        if len(expired) < self.batch_size:
            self.caught_up = True
        return len(expired)

    def refresh(self, now: float) -> int:
        """Load the active shares that expire before the next refresh."""
        interval = self.refresh_interval or refresh_interval_for(self.default_lifetime())
        if self._watermark is None:
            # Pick-up starts from the first refresh: anything written earlier
            # is in the window this refresh loads.
            self._watermark = self.store.change_mark(now)
        self.next_refresh = now + interval
        self.window_end = self.next_refresh + WINDOW_OVERLAP
        self.reminders.refresh(now, self.window_end)
        self.uploads.refresh(now, self.window_end)
        self.requests.refresh(now, self.window_end)
        self.stats.refreshes += 1
        self._window = WindowLoad(self.store, self.window_end, self.window_page, self.window_page_max, clock=self.clock)
        return self.load_window_page()

    def load_window_page(self) -> int:
        """Schedule the next page of the window being loaded; return how many
        shares it pushed."""
        window = self._window
        pushed = self._schedule_page(window.next_page(room=self._next_deadline() - self.clock()))
        window.pushed += pushed
        self._page_owed = False
        if window.done:
            self._window = None
            logger.info(
                "refresh: %d shares due in the window (%d new; pages read: %d), heap %d, next refresh in %.3f s",
                window.rows,
                window.pushed,
                window.pages,
                len(self._scheduled),
                self.next_refresh - self.clock(),
            )
        return pushed

    def pick_up(self) -> int:
        """Schedule shares written by others since the last look."""
        if self._watermark is None:
            self._watermark = self.store.change_mark(self.clock())
        deadlines, self._watermark = self.store.load_changed(self._watermark)
        pushed = sum(self.schedule(d.share_id, d.expires_at) for d in deadlines)
        # Uploads and requests have no change mark: their few deadlines in the window are read again.
        self.uploads.refresh(self.clock(), self.window_end)
        self.requests.refresh(self.clock(), self.window_end)
        if pushed:
            self.stats.pickups += pushed
            logger.debug("picked up %d new or renewed shares", pushed)
        return pushed

    def pop_due(self, now: float, limit: int | None = None) -> list[tuple[float, int]]:
        """Pop the live entries due at `now` (at most `limit`), dropping stale ones."""
        due = []
        heap, scheduled = self._heap, self._scheduled
        while heap and heap[0][0] <= now and (limit is None or len(due) < limit):
            expires_at, share_id = heapq.heappop(heap)
            if scheduled.get(share_id) == expires_at:
                del scheduled[share_id]
                due.append((expires_at, share_id))
        return due

    def expire_due(self, now: float, limit: int | None = None) -> int:
        """Expire the due shares (at most `limit`), re-validated by the
        database in batches.

        If the database fails half-way, the entries not yet done go back on
        the heap before the error propagates, so no share is lost.
        """
        due = self.pop_due(now, limit)
        if limit is not None and len(due) >= limit and self.store.expires_in_bulk:
            # More than a batch is due at once: a burst. On SQLite one UPDATE
            # over the expiry index beats batches of ids (0.4 vs 0.7 s for
            # 100k shares; the RETURNING of each batch alone costs ~3 us a row).
            return expire_burst(self, due)
        # Lateness counts from the real deadline, not from a re-check time.
        deadline_of = self.real_deadlines.take(due)
        pending = sorted(deadline_of)  # sorted ids: a B-tree walk, ~3x faster than random
        expired_total = 0
        statements = self.statements
        try:
            while pending:
                batch = pending[: statements.size]
                expired, dropped, stamp = statements.expire(batch)
                del pending[: len(batch)]
                expired_total += len(expired)
                self.record_batch(expired, deadline_of, stamp)
                if len(expired) + len(dropped) < len(batch):
                    self.reschedule_survivors(set(batch).difference(expired, dropped), stamp)
        except BaseException:
            for share_id in pending:
                if share_id not in self._scheduled:
                    self.schedule(share_id, deadline_of[share_id])
            raise
        return expired_total

    # --- helpers -------------------------------------------------------------

    def _schedule_page(self, deadlines: list[ShareDeadline]) -> int:
        if not self._heap and not self._scheduled:
            # A fresh heap: one heapify beats n pushes for large windows.
            for d in deadlines:
                if d.expires_at < self.window_end:
                    self._scheduled[d.share_id] = d.expires_at
            self._heap = [(expires_at, share_id) for share_id, expires_at in self._scheduled.items()]
            heapq.heapify(self._heap)
            return len(self._heap)
        return sum(self._push(d.share_id, d.expires_at) for d in deadlines)

    def restore(self, entries: list[tuple[float, int]]) -> None:
        """Put popped entries back after a failure: no share is lost."""
        for expires_at, share_id in entries:
            if share_id not in self._scheduled:
                self.schedule(share_id, expires_at)

    def reschedule_survivors(self, share_ids: set[int], stamp: float) -> None:
        """Shares the UPDATE left alone were renewed, unshared or deleted
        meanwhile (those still active are scheduled for their new deadline),
        or, still due, skipped because another transaction held their row:
        those are looked at again RECHECK_DELAY later."""
        ordered = sorted(share_ids)
        current = []
        for start in range(0, len(ordered), self.store.max_batch):
            current += self.store.current_deadlines(ordered[start : start + self.store.max_batch])
        for d in current:
            if d.expires_at <= stamp:
                if self.schedule(d.share_id, stamp + RECHECK_DELAY):
                    self.real_deadlines.remember(d.share_id, d.expires_at)
            else:
                self.schedule(d.share_id, d.expires_at)

    def record_batch(self, expired: list[int], deadline_of: dict[int, float], stamp: float) -> None:
        if not expired:
            return
        # A burst may also expire overdue shares the heap never held (written
        # without a notice moments ago): their lateness is in ended_at alone.
        worst = stamp - min((deadline_of[i] for i in expired if i in deadline_of), default=stamp)
        self.coalescing.record(len(expired), stamp)
        self.stats.expired += len(expired)
        self.stats.batches += 1
        self.stats.worst_lateness = max(self.stats.worst_lateness, worst)
        logger.info("expired %d shares (worst lateness %.3f ms)", len(expired), worst * 1000)
