"""The scan worker: one scan at a time (ScanWorker.run_once), and the
thread that loops it until stopped (ScanThread).

A scan claims a due file (scanning.queue), streams its bytes from its
storage to clamd a chunk at a time, and records the verdict under the
claim: clean, infected (scanning.quarantine), or too big. A file larger
than SCAN_MAX_BYTES is not sent (too big at once); one that passes clamd's
own StreamMaxLength comes back the same way. clamd out of reach, a stream
it refused, or bytes the storage could not read give the file back for a
later try (retry_delay), the file staying withheld meanwhile unless
SCAN_FAIL_OPEN says otherwise (sharing.models.scans).

While clamd does not answer PING the thread claims nothing and looks again
after a back-off: files wait in the queue instead of each spending a try.
"""

import logging
import os
import socket
import threading
from collections.abc import Callable, Iterator
from datetime import datetime

from django.conf import settings
from django.db import close_old_connections, connection
from django.utils import timezone

from scanning import queue
from scanning.clamd import CHUNK_BYTES, Clamd, ClamdError, ClamdUnavailable
from scanning.quarantine import quarantine
from sharing.models import ScanState, StoredFile
from storage import store
from storage.errors import StorageUnavailable

logger = logging.getLogger("scanning")


def worker_id() -> str:
    """This process's name in claims: host, pid and a thread's id."""
    return f"{socket.gethostname()[:40]}:{os.getpid()}:{threading.get_ident() % 100000}"


def chunks_of(stored: StoredFile) -> Iterator[bytes]:
    """The file's bytes, CHUNK_BYTES at a time, from its storage (a bucket
    streams them from one GET)."""
    with store.open_sized(stored.content.storage, stored.content.name, stored.size) as handle:
        while chunk := handle.read(CHUNK_BYTES):
            yield chunk


class ScanWorker:
    """Scans due files one at a time with `clamd`; counts what it did."""

    def __init__(
        self, clamd: Clamd | None = None, *, name: str | None = None, clock: Callable[[], datetime] | None = None
    ):
        self.clamd = clamd or Clamd(settings.CLAMD_URL, settings.SCAN_TIMEOUT)
        self.name = name or worker_id()
        self.clock = clock or timezone.now
        self.scanned = self.infected = self.failed = 0

    def run_once(self, among=None) -> bool:
        """Scan one due file (of `among`, a queryset, when given); return
        whether there was one."""
        claimed = queue.claim_next(self.name, self.clock(), among)
        if claimed is None:
            return False
        claim, stored = claimed
        self.scan(claim, stored)
        return True

    def scan(self, claim: queue.Claim, stored: StoredFile) -> None:
        if stored.size > settings.SCAN_MAX_BYTES:
            queue.record(claim, ScanState.TOO_BIG, self.clock())
            self.scanned += 1
            return
        try:
            verdict = self.clamd.instream(chunks_of(stored))
        except (ClamdUnavailable, ClamdError, StorageUnavailable, OSError) as error:
            self.failed += 1
            delay = queue.retry_delay(stored.scan_attempts)
            logger.warning(
                "scan of file %s failed (try %d, next in %.0f s): %s", stored.pk, stored.scan_attempts, delay, error
            )
            queue.release(claim, stored.scan_attempts, self.clock())
            return
        now = self.clock()
        self.scanned += 1
        if verdict.infected:
            if quarantine(claim, stored, verdict.signature, now):
                self.infected += 1
                logger.warning("file %s is infected (%s): its shares ended", stored.pk, verdict.signature)
        else:
            queue.record(claim, ScanState.TOO_BIG if verdict.too_big else ScanState.CLEAN, now)


class ScanThread(threading.Thread):
    """Runs a ScanWorker until stopped: scans while files are due, looks
    again every SCAN_POLL_INTERVAL seconds when none is, and waits with
    back-off while clamd does not answer PING. A stop lets the scan in
    hand finish (at most SCAN_TIMEOUT)."""

    def __init__(self, worker: ScanWorker | None = None, *, poll_interval: float | None = None):
        super().__init__(name="scans", daemon=True)
        self.worker = worker or ScanWorker()
        self.poll_interval = settings.SCAN_POLL_INTERVAL if poll_interval is None else poll_interval
        self.stop_requested = threading.Event()
        self.errors = 0
        self.unanswered_pings = 0  # looks at clamd that found it gone

    def stop(self) -> None:
        self.stop_requested.set()

    def run(self) -> None:
        down_for = 0
        try:
            while not self.stop_requested.is_set():
                if not self.worker.clamd.ping():
                    down_for += 1
                    self.unanswered_pings += 1
                    if down_for == 1:
                        logger.warning("clamd at %s does not answer; files wait", self.worker.clamd.url)
                    self.stop_requested.wait(queue.retry_delay(down_for))
                    continue
                down_for = 0
                try:
                    busy = self.worker.run_once()
                except Exception:
                    # One bad row must not stop the worker: its claim lapses
                    # and it is tried again later.
                    self.errors += 1
                    logger.exception("scan step failed")
                    busy = False
                    close_old_connections()
                if not busy:
                    self.stop_requested.wait(self.poll_interval)
        finally:
            connection.close()  # this thread's own; a test database must not keep it
