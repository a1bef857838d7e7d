"""A heap of keys by the time each falls due, where a key has one time.

Rescheduling a key pushes a new entry and leaves the old one in the heap,
to be skipped when it surfaces (a heap cannot remove from its middle
cheaply); `_scheduled` says which entry is a key's current one. Used for
reminders (expiry.reminders) and resumable uploads (expiry.uploads); the
shares' own heap (expiry.scheduler) adds coalescing and batches of its own.
"""

import heapq
import math
import time
from collections.abc import Callable, Hashable


class DeadlineHeap:
    def __init__(self):
        self._heap: list[tuple[float, Hashable]] = []
        self._scheduled: dict[Hashable, float] = {}

    def reset(self) -> None:
        self._heap.clear()
        self._scheduled.clear()

    def __len__(self) -> int:
        """Keys scheduled (stale entries not counted)."""
        return len(self._scheduled)

    def time_of(self, key: Hashable) -> float | None:
        return self._scheduled.get(key)

    def push(self, key: Hashable, when: float) -> bool:
        """Schedule `key` at `when`; False if it already was, at that time."""
        if self._scheduled.get(key) == when:
            return False
        self._scheduled[key] = when
        heapq.heappush(self._heap, (when, key))
        return True

    def forget(self, key: Hashable) -> None:
        self._scheduled.pop(key, None)

    def next_time(self) -> float:
        """The head's time (perhaps a stale entry's: waking early is harmless)."""
        return self._heap[0][0] if self._heap else math.inf

    def has_due(self, now: float) -> bool:
        return bool(self._heap) and self._heap[0][0] <= now

    def pop_due(self, now: float, limit: int) -> list:
        """Take up to `limit` keys due at `now`, earliest first."""
        due, heap, scheduled = [], self._heap, self._scheduled
        while heap and heap[0][0] <= now and len(due) < limit:
            when, key = heapq.heappop(heap)
            if scheduled.get(key) == when:
                del scheduled[key]
                due.append(key)
        return due


class WindowedSchedule:
    """What the daemon's second and third kinds of deadline share (reminders,
    uploads): a DeadlineHeap of the times due before the expiry window's end,
    looked at only when no share is due."""

    def __init__(self, *, batch: int, clock: Callable[[], float] | None = None):
        self.clock = clock or time.time  # looked up now, so freezegun can stand in
        self.batch = batch
        self.window_end = float("-inf")
        self._heap = DeadlineHeap()

    def reset(self) -> None:
        self._heap.reset()
        self.window_end = float("-inf")

    def __len__(self) -> int:
        return len(self._heap)

    def scheduled_time(self, key: Hashable) -> float | None:
        return self._heap.time_of(key)

    def next_time(self) -> float:
        return self._heap.next_time()

    def has_due(self, now: float) -> bool:
        return self._heap.has_due(now)
