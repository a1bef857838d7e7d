"""Each share's lateness, as the expiry benchmark reads it: from the daemon's
id log ("<id> <ended_at> <logged_at>", logged_at taken just after the commit,
expiry/idlog.py) and the share's expires_at read back from the database.

- lateness: logged_at - expires_at, when the expiry was committed (what a
  visitor could observe), never the earlier stamp;
- its two parts: ended_at - expires_at, when the daemon decided (its timer,
  the GIL, coalescing), and logged_at - ended_at, the write (waiting for
  SQLite's write lock or PostgreSQL's row locks, the UPDATE, the COMMIT).
"""

import contextlib
import sqlite3
from pathlib import Path

import psycopg

from bench.db import SHARE_TABLE, parse_ts
from bench.stats import lateness_ms

SOURCES = ("seeded", "created")


def read_id_log(path: Path) -> dict[int, tuple[float, float]]:
    """share id -> (ended_at, logged_at), epoch seconds."""
    found = {}
    with contextlib.suppress(FileNotFoundError):
        for line in path.read_text().splitlines():
            share_id, ended, logged = line.split()
            found[int(share_id)] = (float(ended), float(logged))
    return found


def sqlite_path(database_url: str) -> str:
    return database_url.removeprefix("sqlite:///")


def deadlines(database_url: str, since: float, until: float) -> dict[int, float]:
    """id -> expires_at (epoch seconds) of every share due in [since, until]."""
    if database_url.startswith("sqlite:"):
        path = sqlite_path(database_url)
        sql = f"SELECT id, expires_at FROM {SHARE_TABLE}"
        with contextlib.closing(sqlite3.connect(path, timeout=20)) as conn:
            rows = [(i, parse_ts(e)) for i, e in conn.execute(sql)]
        return {i: e for i, e in rows if since <= e <= until}
    sql = (
        f"SELECT id, extract(epoch FROM expires_at)::float8 FROM {SHARE_TABLE} "
        "WHERE expires_at BETWEEN to_timestamp(%s) AND to_timestamp(%s)"
    )
    with psycopg.connect(database_url, connect_timeout=5) as conn:
        return dict(conn.execute(sql, (since, until)).fetchall())


def summarize(due: dict[int, float], logged: dict[int, tuple[float, float]], seeded: tuple[int, int] | None) -> dict:
    """Lateness of the shares in `due`, all and by source (seeded ids, or
    created over REST during the run)."""
    out = {}
    for source in ("all", *SOURCES):
        if source == "all":
            ids = list(due)
        else:
            ids = [i for i in due if (seeded is not None and seeded[0] <= i <= seeded[1]) == (source == "seeded")]
        done = [i for i in ids if i in logged]
        out[source] = {
            "due": len(ids),
            "not_expired": len(ids) - len(done),
            "lateness": lateness_ms([logged[i][1] - due[i] for i in done]),
            "decided": lateness_ms([logged[i][0] - due[i] for i in done]),
            "write": lateness_ms([logged[i][1] - logged[i][0] for i in done]),
        }
    return out


def count_since(database_url: str, share_id: int) -> int:
    """Shares with an id above `share_id`: those created over REST during the load."""
    sql = f"SELECT count(*) FROM {SHARE_TABLE} WHERE id > {int(share_id)}"
    if database_url.startswith("sqlite:"):
        with contextlib.closing(sqlite3.connect(sqlite_path(database_url), timeout=20)) as conn:
            return conn.execute(sql).fetchone()[0]
    with psycopg.connect(database_url, connect_timeout=5) as conn:
        return conn.execute(sql).fetchone()[0]
