"""One thread per process that sends the email notices.

Mail servers are slow (an SMTP exchange takes tens of milliseconds to
seconds) and sometimes down: a request thread must not wait for one, nor
must the expiry daemon's thread, whose deadlines are milliseconds apart. Jobs
go into a queue; this thread runs them one after another with a database
connection of its own, closed whenever the queue runs empty.

A job that fails is logged and dropped, and a job still queued when the
process dies is lost: email notices are sent at most once (see
docs/deployment.md, Email). Correctness (who sends) is the claims' affair,
never this queue's.
"""

import logging
import os
import queue
import threading
import time

from django.db import connections

logger = logging.getLogger("notices")

_STOP = object()


class MailWorker:
    def __init__(self, name: str = "notices-mail"):
        self.name = name
        self.queue: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, job, *args) -> None:
        """Run `job(*args)` on the worker thread, started on first use (so
        it inherits the signal mask of the thread that submits first)."""
        self.queue.put((job, args))
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            item = self.queue.get()
            try:
                if item is _STOP:
                    return
                job, args = item
                try:
                    job(*args)
                except Exception:
                    logger.exception("email notice %s%r failed; not retried", getattr(job, "__name__", job), args)
                if self.queue.empty():
                    connections.close_all()  # this thread's connections only
            finally:
                self.queue.task_done()

    def flush(self, timeout: float) -> bool:
        """Wait until every job submitted so far has run; return False on timeout."""
        deadline = time.monotonic() + timeout
        with self.queue.all_tasks_done:
            while self.queue.unfinished_tasks:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self.queue.all_tasks_done.wait(remaining)
        return True

    def close(self, timeout: float = 10.0) -> bool:
        """Send what is queued (for at most `timeout`), then stop the thread."""
        with self._lock:
            thread = self._thread
        if thread is None or not thread.is_alive():
            return True
        self.queue.put(_STOP)
        done = self.flush(timeout)
        thread.join(max(0.0, timeout))
        if not done:
            logger.warning("stopped with %d email notices unsent", self.queue.qsize())
        return done


_worker: MailWorker | None = None
_worker_pid: int | None = None
_worker_lock = threading.Lock()


def default_worker() -> MailWorker:
    """This process's worker (a forked child gets its own: threads do not survive fork)."""
    global _worker, _worker_pid
    with _worker_lock:
        if _worker is None or _worker_pid != os.getpid():
            _worker, _worker_pid = MailWorker(), os.getpid()
        return _worker
