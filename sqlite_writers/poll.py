"""The expiry path's way into SQLite's write lock: asked for every 0.2 ms.

A writer that finds SQLite's lock taken waits in the busy handler, which
sleeps 1, 2, 5, 10 ... up to 100 ms between tries; under web load the
daemon's expiries slept there most of their time and came tens to hundreds
of ms late while web writers took the lock in between (python -m bench.mixed
with --profile). Web writers queue in the kernel (sqlite_writers.queue);
the daemon asks again every POLL instead, so it gets the lock soon after the
transaction holding it commits. This decides who waits less, not what is
written: BEGIN IMMEDIATE and the conditional UPDATE still decide that.
"""

import sqlite3
import time

POLL = 0.0002


def begin_immediate(raw: sqlite3.Connection, timeout: float, *, clock=time.monotonic, sleep=time.sleep) -> None:
    """BEGIN IMMEDIATE on `raw`, trying every POLL for up to `timeout`
    seconds (then "database is locked" as usual); the connection's busy
    timeout is `timeout` again afterwards."""
    raw.execute("PRAGMA busy_timeout = 0")
    try:
        deadline = clock() + timeout
        while True:
            try:
                raw.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or clock() >= deadline:
                    raise
            sleep(POLL)
    finally:
        raw.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
