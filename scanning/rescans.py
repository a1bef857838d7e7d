"""Rescanning stored files (after a signature update): which files, queued
at once, then scanned here with a progress line (other workers take some
of them as they would any due file)."""

from collections.abc import Callable

from django.utils import timezone

from scanning.worker import ScanWorker
from sharing.models import ScanState, StoredFile
from sharing.models.scans import queue_rescan


def chosen_files(*, ids: list[int] | None = None, states: list[str] | None = None):
    """All files, those of `ids`, or those in `states`."""
    files = StoredFile.objects.all()
    if ids:
        files = files.filter(pk__in=ids)
    if states:
        files = files.filter(scan_state__in=states)
    return files


def rescan(files, worker: ScanWorker | None, progress: Callable[[int, int], None]) -> tuple[int, int]:
    """Queue `files` and, with a `worker`, scan them until none is due;
    `progress(done, total)` after each. Return (queued, still queued)."""
    ids = list(files.values_list("pk", flat=True))
    queued = queue_rescan(StoredFile.objects.filter(pk__in=ids), timezone.now())
    mine = StoredFile.objects.filter(pk__in=ids)
    progress(0, queued)
    if worker is not None:
        while worker.run_once(among=mine):
            progress(queued - waiting(mine), queued)
    return queued, waiting(mine)


def waiting(files) -> int:
    return files.filter(scan_due_at__isnull=False).exclude(scan_state=ScanState.INFECTED).count()
