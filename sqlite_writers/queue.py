"""A queue for the writers of one SQLite file, across threads and processes.

SQLite lets one writer in at a time, and a writer that finds the lock taken
waits in SQLite's busy handler, which sleeps 1, 2, 5, 10 ... up to 100 ms
between tries and so loses the lock again and again to writers that arrive
while it sleeps: under 16 concurrent writers a write waited up to seconds
(docs/benchmarks.md, "Daemon lateness under web load"). Writers that first take an exclusive flock() on a file
beside the database wait in the kernel instead, and the one woken when the
holder leaves finds SQLite's lock free. The lock orders waiting only: what
may be written is still decided by the database (BEGIN IMMEDIATE, conditional
UPDATEs), so a writer that does not use the queue (the expiry daemon, which
polls for the lock more finely to go first) stays correct.
"""

import fcntl
import os
from pathlib import Path

SUFFIX = ".writers"


class WriterQueue:
    """One place in the queue: join() before BEGIN IMMEDIATE, leave() after
    COMMIT or ROLLBACK. One instance per connection (flock() locks belong to
    an open file, so each thread's connection queues on its own)."""

    def __init__(self, database_path: str | Path):
        self.path = Path(f"{database_path}{SUFFIX}")
        self._fd: int | None = None
        self.held = False

    def join(self) -> None:
        if self._fd is None:
            umask = os.umask(0o077)  # beside the database, as private as it
            try:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            finally:
                os.umask(umask)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        self.held = True

    def leave(self) -> None:
        if self.held:
            self.held = False
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        self.leave()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def queue_for(database_name: str) -> WriterQueue | None:
    """The queue of a database file; None for an in-memory database."""
    name = str(database_name)
    if name == ":memory:" or "mode=memory" in name or not name:
        return None
    return WriterQueue(name)
