"""Deadlines kept by rows the database decides on: resumable uploads
(expiry.uploads) and upload requests (expiry.requests).

Like reminders, the deadlines due before the expiry window's end are kept
in a heap of their own, loaded by the window's refresh and read again at
each pick-up (a row created by another process with a short deadline is
found within one pick-up), and a step runs only when no share expiry is
due. When one falls due the database decides (the source's `end_if_due`:
the row locked, the time read then, the one `due` rule): a row renewed or
ended by someone else meanwhile is left alone, and one still there is
scheduled again at its deadline as the database now has it.
"""

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from expiry.deadlines import WindowedSchedule
from expiry.store import to_datetime

logger = logging.getLogger("expiry")

# Rows ended per step (each its own short transaction): shares come first between steps.
ROW_BATCH = 50
# A row still there when its deadline passed (being written to, or renewed)
# is looked at again no sooner than this.
RECHECK = 1.0


class DeadlineSource(Protocol):
    """What a RowSchedule asks of the rows it keeps the deadlines of."""

    noun: str  # for the log: "upload", "upload request"

    def deadlines_before(self, until) -> list[tuple]: ...  # (key, deadline as a timestamp)

    def end_if_due(self, key) -> bool: ...

    def deadlines_of(self, keys: list) -> list[tuple]: ...  # the rows still there, as now


@dataclass
class RowStats:
    ended: int = 0
    renewed: int = 0


class RowSchedule(WindowedSchedule):
    def __init__(self, source: DeadlineSource, *, batch: int = ROW_BATCH, clock: Callable[[], float] | None = None):
        super().__init__(batch=batch, clock=clock)
        self.source = source
        self.stats = RowStats()

    def refresh(self, now: float, window_end: float) -> int:
        """Load the deadlines before `window_end` (the expiry window's end);
        called by the window's refresh and by every pick-up."""
        self.window_end = window_end
        return sum(self._push(key, deadline) for key, deadline in self.source.deadlines_before(to_datetime(window_end)))

    def _push(self, key, deadline: float) -> bool:
        if deadline >= self.window_end:
            return False  # the refresh that covers it loads it
        return self._heap.push(key, deadline)

    def run_due(self, now: float) -> int:
        """End up to `batch` due rows; return how many ended."""
        ended, kept = 0, []
        for key in self._heap.pop_due(now, self.batch):
            if self.source.end_if_due(key):
                ended += 1
                logger.info("%s %s ended at its deadline", self.source.noun, str(key)[:6])
            else:
                kept.append(key)
        self.stats.ended += ended
        if kept:
            for key, deadline in self.source.deadlines_of(kept):
                self.stats.renewed += self._push(key, max(deadline, now + RECHECK))
        return ended


class NoRows:
    """No such deadlines (runexpiry --once, tests of the share expiry alone)."""

    def __init__(self):
        self.stats = RowStats()

    def reset(self) -> None:
        pass

    def refresh(self, now: float, window_end: float) -> int:
        return 0

    def next_time(self) -> float:
        return float("inf")

    def has_due(self, now: float) -> bool:
        return False
