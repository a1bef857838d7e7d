"""Unfinished (and finished, kept) resumable uploads end at their deadline too.

An upload's deadline (Upload-Expires) is the daemon's third kind of deadline,
beside shares' and reminders'. Like reminders, the upload deadlines due
before the expiry window's end are kept in a heap of their own, loaded by
the window's refresh and read again at each pick-up (an upload created by
another process with a short deadline is found within one pick-up), and a
step runs only when no share expiry is due. When one falls due the database
decides (uploads.models.remove_if_due: the upload's row locked, the time
read then, the one `due` rule): an upload a chunk renewed meanwhile stays,
and is scheduled again at its new deadline. Removal deletes the row, gives
back the space it set aside and unlinks its bytes right after the commit.
"""

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass

from expiry.deadlines import WindowedSchedule
from expiry.store import to_datetime
from uploads.models import Upload, deadlines_before, remove_if_due

logger = logging.getLogger("expiry")

# Removals per step (each its own short transaction): shares come first between steps.
UPLOAD_BATCH = 50


@dataclass
class UploadStats:
    removed: int = 0
    renewed: int = 0


class NoUploads:
    """No upload deadlines (runexpiry --once, tests of the share expiry alone)."""

    def __init__(self):
        self.stats = UploadStats()

    def reset(self) -> None:
        pass

    def refresh(self, now: float, window_end: float) -> int:
        return 0

    def next_time(self) -> float:
        return math.inf

    def has_due(self, now: float) -> bool:
        return False


class UploadSchedule(WindowedSchedule):
    def __init__(self, *, batch: int = UPLOAD_BATCH, clock: Callable[[], float] | None = None):
        super().__init__(batch=batch, clock=clock)
        self.stats = UploadStats()

    def refresh(self, now: float, window_end: float) -> int:
        """Load the upload deadlines before `window_end` (the expiry window's
        end); called by the window's refresh and by every pick-up."""
        self.window_end = window_end
        return sum(self._push(upload_id, deadline) for upload_id, deadline in deadlines_before(to_datetime(window_end)))

    def _push(self, upload_id: str, deadline: float) -> bool:
        if deadline >= self.window_end:
            return False  # the refresh that covers it loads it
        return self._heap.push(upload_id, deadline)

    def run_due(self, now: float) -> int:
        """Remove up to `batch` due uploads; return how many went."""
        removed, kept = 0, []
        for upload_id in self._heap.pop_due(now, self.batch):
            if remove_if_due(upload_id):
                removed += 1
                logger.info("upload %s… removed at its deadline", upload_id[:6])
            else:
                kept.append(upload_id)
        self.stats.removed += removed
        if kept:
            # Renewed by a chunk since (or being written now): follow its deadline.
            for upload_id, deadline in Upload.objects.filter(pk__in=kept).values_list("pk", "expires_at"):
                self.stats.renewed += self._push(upload_id, max(deadline.timestamp(), now + WRITING_RECHECK))
        return removed


# An upload being written when its deadline passed is looked at again this
# much later (its claim renews while it writes, and its chunk renews the deadline).
WRITING_RECHECK = 1.0
