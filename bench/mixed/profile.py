"""Read py-spy's collapsed stacks of the daemon (waits.py records them with
--idle --native --threads): where its expiry thread's wall time went.

Each sample of the thread named "runexpiry" is put in the first category
whose test matches its stack (frames joined with ";", outermost first).
The expiry path is ShareStore._claim (the UPDATE, its events, the COMMIT);
outside it the thread is either waiting for the next deadline or notice, or
running the scheduler's Python.
"""

from collections import Counter
from pathlib import Path

EXPIRY_THREAD = ": runexpiry"  # py-spy's thread frame: "thread (<tid>): runexpiry"

CATEGORIES = (
    # SQLite's default busy handler sleeps 1, 2, 5, 10, ... up to 100 ms
    # between tries for a lock another connection holds.
    ("expiry: SQLite busy handler, sleeping for the write lock", lambda s: "sqlite3InvokeBusyHandler" in s),
    (
        "expiry: SQLite file I/O (pread/pwrite/fsync)",
        lambda s: "libsqlite3" in s and _leaf_in(s, "pread", "pwrite", "fsync", "fdatasync"),
    ),
    ("expiry: SQLite file locks (fcntl)", lambda s: "libsqlite3" in s and _leaf_in(s, "fcntl")),
    ("expiry: SQLite running SQL (CPU)", lambda s: "libsqlite3" in s),
    # psycopg waits for the server's answer in its wait functions (poll/select).
    (
        "expiry: PostgreSQL, waiting for the server",
        lambda s: (
            "ShareStore._claim" in s and "psycopg" in s and _leaf_in(s, "poll", "select", "epoll", "recv", "wait")
        ),
    ),
    ("expiry: Python around the statement", lambda s: "ShareStore._claim" in s),
    ("after the commit: signals, id log, event bookkeeping", lambda s: "on_commit" in s or "Signal.send" in s),
    (
        "waiting for the next deadline or notice (idle)",
        lambda s: "Condition.wait" in s or "Event.wait" in s or _leaf_in(s, "poll", "select", "epoll_wait"),
    ),
    ("scheduler and other Python (CPU)", lambda s: True),
)


def _leaf_in(stack: str, *names: str) -> bool:
    # The last two frames: libc's own leaf is often an unnamed address.
    leaf = ";".join(stack.rsplit(";", 2)[-2:])
    return any(name in leaf for name in names)


def read(path: Path) -> dict:
    """Share of the expiry thread's samples per category, in %, and the count."""
    counts: Counter = Counter()
    total = 0
    for line in Path(path).read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack or not stack.split(";", 1)[0].endswith(EXPIRY_THREAD):
            continue
        total += int(n)
        for name, test in CATEGORIES:
            if test(stack):
                counts[name] += int(n)
                break
    return {
        "samples": total,
        "categories": {name: round(100 * counts[name] / total, 1) for name, _ in CATEGORIES if counts[name]}
        if total
        else {},
    }
