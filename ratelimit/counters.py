"""Atomic counters that every worker and node of a deployment shares.

- Redis (REDIS_URL set): Django's Redis cache (ratelimit.redis_counters).
- Otherwise a small SQLite file of its own (RATELIMIT_SQLITE_PATH, under
  var/): every process of the machine opens the same file, and an upsert
  with RETURNING counts atomically. It is not the main database, so counting
  never queues behind share writes for the write lock, and it is not
  Django's file or database cache, whose incr() is a get and then a set.
"""

import functools
import os
import sqlite3
import threading
import time
from pathlib import Path

from django.conf import settings
from django.utils.module_loading import import_string

from ratelimit.ahead import CountedAhead
from sqlite_writers.group_commit import GroupCommit
from sqlite_writers.queue import WriterQueue


class CountersUnavailable(Exception):
    """The shared counters cannot be reached: Redis is down, or the SQLite
    file stayed locked past its timeout or cannot be written."""


def reachable(method):
    """Report any failure of the counters' store as CountersUnavailable, so
    callers answer "try again" (503) instead of failing with a 500."""

    @functools.wraps(method)
    def wrapped(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except Exception as exc:
            if not isinstance(exc, shared_counters().errors):
                raise
            raise CountersUnavailable(f"{type(exc).__name__}: {exc}") from exc

    return wrapped


class SqliteCounters:
    """Counters in one SQLite file shared by the processes of one machine."""

    # What this store raises when it cannot be reached.
    errors = (sqlite3.Error, OSError)

    # Purge lapsed keys about once in this many increments.
    PURGE_EVERY = 500
    INCREMENT = (
        "INSERT INTO counter (key, n, expires) VALUES (?, ?, ?) "
        "ON CONFLICT (key) DO UPDATE SET n = n + excluded.n RETURNING n"
    )

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.local = threading.local()
        self.increments = 0
        self.batches = GroupCommit(self._increment_batch)
        self.ahead = CountedAhead()

    def _connection(self) -> sqlite3.Connection:
        conn = getattr(self.local, "conn", None)
        if conn is None:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            queue = WriterQueue(self.path)
            # Opened in the writers' queue: processes opening a new file at
            # once each switch it to WAL and create the table, and SQLite
            # can answer one of them "database is locked" at once, without
            # waiting in its busy handler.
            queue.join()
            try:
                conn = self._open()
            finally:
                queue.leave()
            self.local.conn = conn
            self.local.queue = queue
        return conn

    def _open(self) -> sqlite3.Connection:
        umask = os.umask(0o077)  # counters name client addresses: owner only
        try:
            conn = sqlite3.connect(self.path, timeout=5, isolation_level=None, check_same_thread=False)
        finally:
            os.umask(umask)
        conn.execute("PRAGMA journal_mode=WAL")
        # Counters are not precious: a crash may lose the last few.
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS counter (key TEXT PRIMARY KEY, n INTEGER NOT NULL, expires REAL NOT NULL)"
        )
        return conn

    def _write(self, sql: str, params: list):
        """Run one write in its own transaction; return the first row."""
        conn = self._connection()
        return self._in_transaction(lambda: conn.execute(sql, params).fetchone())

    def _in_transaction(self, work):
        """Run work() in BEGIN IMMEDIATE: a plain autocommit write starts as
        a reader and, when another connection commits first, fails with
        "database is locked" at once instead of waiting (SQLite's busy
        handler is not called for that upgrade). Return what it returns."""
        conn = self._connection()
        queue = self.local.queue  # writers of all workers take turns (sqlite_writers.queue)
        queue.join()
        try:
            conn.execute("BEGIN IMMEDIATE")  # waits up to the connection's timeout
            try:
                result = work()
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        finally:
            queue.leave()
        return result

    def _increment_batch(self, take) -> list[int]:
        """The increments of this process's threads that arrived together,
        in one transaction (sqlite_writers.group_commit): every request of a
        public link counts one, and a turn at the file's lock for each kept
        the busiest links waiting in line."""

        def increment_all():
            conn = self._connection()
            return [
                conn.execute(self.INCREMENT, [key, amount, expires]).fetchone()[0] for key, amount, expires in take()
            ]

        return self._in_transaction(increment_all)

    def incr(self, key: str, ttl: float, amount: int = 1) -> int:
        now = time.time()
        count = self.batches.submit((key, amount, now + ttl))
        self.increments += 1
        if self.increments % self.PURGE_EVERY == 0:
            self._write("DELETE FROM counter WHERE expires <= ?", [now])
        return count

    def decr(self, key: str, amount: int = 1) -> None:
        """Undo increments of this process (refused hits)."""
        self._write("UPDATE counter SET n = MAX(n - ?, 0) WHERE key = ? RETURNING n", [amount, key])

    def take_back(self, key: str) -> bool:
        """Decrement `key` if it is above zero; return whether it was."""
        return self._write("UPDATE counter SET n = n - 1 WHERE key = ? AND n > 0 RETURNING n", [key]) is not None

    def values(self, keys: list[str]) -> dict[str, int]:
        placeholders = ", ".join("?" * len(keys))
        rows = self._connection().execute(
            f"SELECT key, n FROM counter WHERE key IN ({placeholders}) AND expires > ?", [*keys, time.time()]
        )
        return dict(rows.fetchall())


_counters = None
_lock = threading.Lock()


def shared_counters():
    """The deployment's counters: Redis when the default cache is Redis,
    else the machine-wide SQLite file."""
    global _counters
    with _lock:
        if _counters is None:
            backend = settings.CACHES["default"]["BACKEND"]
            if backend == "django.core.cache.backends.redis.RedisCache":
                # By its path, as Django imports a cache backend: the Redis
                # client (and what it imports) was ~6 MB of the web server's
                # idle memory, loaded only where Redis is configured.
                _counters = import_string("ratelimit.redis_counters.RedisCounters")()
            else:
                _counters = SqliteCounters(settings.RATELIMIT_SQLITE_PATH)
        return _counters


def reset_shared_counters() -> None:
    """Forget the chosen backend (tests switch settings)."""
    global _counters
    with _lock:
        _counters = None
