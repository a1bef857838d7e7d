"""Partial bytes that no upload names any more, swept.

An upload's partial bytes go with its row (uploads.models: the file, or the
bucket's parts and tails, right after the removal commits), but a process
can die in between: after making the partial file and before the row that
names it commits, after a removal's commit and before the unlink, or while
a finisher holds the `.store` name it gave the partial file. Nothing would
look at those bytes again, and they would fill the disk or the bucket for
good. The sweep lists the partial folder (on the disk, or in the bucket),
keeps whatever a live Upload row names and whatever was written less than
GRACE ago (an upload being created makes its partial file just before its
row commits), and discards the rest as a removal would.
"""

import logging
import os
import re
import time
from datetime import timedelta

from storage import store
from uploads.models import ID_PATTERN, PARTIAL_FOLDER, Upload, discard_partial_file, partial_dir

logger = logging.getLogger("uploads")

# Far longer than any creation takes between its partial file and its row's commit.
GRACE = timedelta(hours=1)
# Upload ids looked up per query.
CHUNK = 500
UPLOAD_ID = re.compile(ID_PATTERN)


def held() -> dict[str, float]:
    """The uploads named under the partial folder (`<id>`, `<id>.store`,
    `<id>.tail-<offset>`), each with when its bytes were last written."""
    listed = store.held_under(PARTIAL_FOLDER)
    if listed is None:
        listed = _on_disk()
    newest: dict[str, float] = {}
    for name, written in listed:
        upload_id = name.split(".", 1)[0]
        if UPLOAD_ID.fullmatch(upload_id):
            newest[upload_id] = max(written, newest.get(upload_id, written))
    return newest


def _on_disk() -> list[tuple[str, float]]:
    listed = []
    try:
        with os.scandir(partial_dir()) as entries:
            for entry in entries:
                try:
                    if entry.is_file(follow_symlinks=False):
                        listed.append((entry.name, entry.stat(follow_symlinks=False).st_mtime))
                except FileNotFoundError:
                    continue  # removed meanwhile
    except FileNotFoundError:
        return []  # no upload was ever made here
    return listed


def sweep_strays(now: float | None = None, *, grace: timedelta = GRACE, using: str = "default") -> int:
    """Discard the partial bytes of uploads that have no row, last written
    more than `grace` before `now` (a timestamp; the wall clock's when
    None). Return how many uploads' bytes went."""
    cutoff = (time.time() if now is None else now) - grace.total_seconds()
    old = sorted(upload_id for upload_id, written in held().items() if written <= cutoff)
    removed = 0
    for start in range(0, len(old), CHUNK):
        chunk = old[start : start + CHUNK]
        live = set(Upload.objects.using(using).filter(pk__in=chunk).values_list("pk", flat=True))
        for upload_id in chunk:
            if upload_id not in live:
                discard_partial_file(upload_id)
                removed += 1
    if removed:
        logger.info("discarded the partial bytes of %d removed uploads", removed)
    return removed
