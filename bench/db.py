"""The benchmark's databases: the project's real schema, filled fast.

The schema comes from the project's own migrations (`manage.py migrate` in a
subprocess, once per run, into a template file); every engine run then gets
its own copy of that template, filled with plain sqlite3 in one transaction.
Values are stored exactly as Django stores them on SQLite, so our daemon reads
them through the ORM like any row the app wrote: datetimes as UTC text
'YYYY-MM-DD HH:MM:SS.ffffff', status 'active', end_reason ''.
"""

import contextlib
import os
import random
import secrets
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARE_TABLE = "sharing_share"
EVENT_TABLE = "sharing_shareevent"  # the shares' history
BUSY_TIMEOUT_S = 20.0  # the app's default SQLITE_BUSY_TIMEOUT
DAY = 86400.0


def to_us(timestamp: float) -> int:
    """Seconds since the epoch as whole microseconds, the precision Django stores."""
    return round(timestamp * 1_000_000)


def format_us(timestamp_us: int) -> str:
    """Django's SQLite text for a UTC instant, from whole microseconds."""
    seconds, micros = divmod(timestamp_us, 1_000_000)
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds)) + f".{micros:06d}"


def format_ts(timestamp: float) -> str:
    return format_us(to_us(timestamp))


def parse_ts(text: str) -> float:
    """Django's SQLite datetime text (UTC, naive) back to seconds since the epoch.

    timedelta.total_seconds() works in whole microseconds, so this is exact to
    the microsecond; SQLite's julianday() would round to milliseconds, too
    coarse for sub-millisecond lateness.
    """
    return (datetime.fromisoformat(text) - EPOCH).total_seconds()


EPOCH = datetime(1970, 1, 1)


def _sql_datetime(param: str) -> str:
    # Formatting in SQLite's C code is ~10x faster than strftime in Python for
    # a million rows; the text is the same as format_us().
    return f"strftime('%Y-%m-%d %H:%M:%S', {param} / 1000000, 'unixepoch') || printf('.%06d', {param} % 1000000)"


# One share as the app creates it: active, no end, created_at = updated_at,
# but holding no file (the expiry daemon never reads a share's files).
# Parameters: token, created/updated (us), expires (us), owner id.
INSERT_SHARE_SQL = (
    f"INSERT INTO {SHARE_TABLE} (token, created_at, updated_at, expires_at, status, ended_at, end_reason, "
    "download_count, max_downloads, password_hash, owner_id) "
    f"VALUES (?1, {_sql_datetime('?2')}, {_sql_datetime('?2')}, {_sql_datetime('?3')}, "
    "'active', NULL, '', 0, NULL, '', ?4)"
)


def connect(path: Path) -> sqlite3.Connection:
    """A connection set up like the app's: WAL, synchronous=NORMAL, busy timeout.

    Autocommit (isolation_level=None): every transaction is explicit, or one
    statement is one transaction.
    """
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
    return conn


def django_env(db_path: Path, **extra: str) -> dict[str, str]:
    """Environment for a Django process (manage.py) on the SQLite file `db_path`.

    DATABASE_URL and the EXPIRY_* settings are dropped, so a developer's or
    CI's own values never point a benchmark engine at another database or
    change its defaults.
    """
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL" and not k.startswith("EXPIRY_")}
    env.update(SQLITE_PATH=str(db_path), LOG_LEVEL="WARNING", DJANGO_SETTINGS_MODULE="microcloud.settings")
    # DEBUG is off, as in production, so a key is needed; this one signs nothing that matters.
    env.setdefault("SECRET_KEY", "bench-only-secret-key-for-throwaway-databases")
    env.update(extra)
    return env


@dataclass
class Databases:
    """Hands out fresh database files under one work directory."""

    workdir: Path
    template: Path | None = None
    owner_id: int = 0
    _counter: int = 0

    def prepare(self) -> None:
        """Migrate the template once and give it an owner for every share."""
        self.template = self.workdir / "template.sqlite3"
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput", "--verbosity", "0"],
            cwd=REPO_ROOT,
            env=django_env(self.template),
            check=True,
            timeout=180,
            capture_output=True,
        )
        with contextlib.closing(connect(self.template)) as conn:
            conn.execute(
                "INSERT INTO auth_user (password, last_login, is_superuser, username, last_name, email, is_staff, "
                "is_active, date_joined, first_name) "
                "VALUES ('!', NULL, 0, 'bench', '', 'bench@example.com', 0, 1, ?, '')",
                (format_ts(time.time()),),
            )
            self.owner_id = conn.execute("SELECT id FROM auth_user WHERE username = 'bench'").fetchone()[0]
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def fresh(self, name: str, source: Path | None = None) -> Path:
        """A new database file: a copy of `source` (default: the empty template)."""
        assert self.template is not None, "prepare() first"
        self._counter += 1
        path = self.workdir / f"{self._counter:02d}-{name}.sqlite3"
        shutil.copyfile(source or self.template, path)
        return path

    def remove(self, path: Path) -> None:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)


def fill(path: Path, owner_id: int, deadlines: Iterable[float], created_at: float) -> int:
    """Insert one active share per deadline, all in one transaction.

    created_at (= updated_at) must be before every deadline, as the schema's
    check constraint demands. Tokens are random, as the app's are, so the
    unique index on token is built in random order like in production.
    """
    created_us = to_us(created_at)

    def rows() -> Iterator[tuple[str, int, int, int]]:
        for deadline in deadlines:
            yield secrets.token_urlsafe(32), created_us, to_us(deadline), owner_id

    with contextlib.closing(connect(path)) as conn:
        # Durability is irrelevant while filling a scratch file; the engines
        # reopen it with the app's settings.
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("PRAGMA cache_size=-262144")  # 256 MiB: indexes stay in memory while filling
        conn.execute("BEGIN IMMEDIATE")
        before = conn.total_changes
        conn.executemany(INSERT_SHARE_SQL, rows())
        conn.execute("COMMIT")
        inserted = conn.total_changes - before
        # Engines start with an empty WAL, as after a quiet period.
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return inserted


def far_deadlines(count: int, *, now: float, window: int = 0, seed: int = 1) -> tuple[list[float], float]:
    """Deadlines for a big, quiet table, and the bound of its window.

    `window` shares fall due in the hour after now + 2 days, the rest between
    then and now + 9 days; none is due within a day, so no engine's window
    (the daemon's refresh interval, the seed loop's 1 day) holds any of them.
    Returned sorted: shares are created over time with similar lifetimes, so
    ids and deadlines grow together in a real table.
    """
    rng = random.Random(seed)
    start = now + 2 * DAY
    bound = start + 3600.0
    near = [rng.uniform(start, bound) for _ in range(window)]
    rest = [rng.uniform(bound, now + 9 * DAY) for _ in range(count - window)]
    return sorted(near + rest), bound


@dataclass(frozen=True)
class Outcome:
    expires_at: float
    status: str
    ended_at: float | None

    @property
    def lateness(self) -> float | None:
        if self.status != "expired" or self.ended_at is None:
            return None
        return self.ended_at - self.expires_at


def read_outcomes(path: Path) -> list[Outcome]:
    """Every share's deadline, status and end, for lateness = ended_at - expires_at."""
    with contextlib.closing(connect(path)) as conn:
        rows = conn.execute(f"SELECT expires_at, status, ended_at FROM {SHARE_TABLE}").fetchall()
    return [Outcome(parse_ts(e), s, parse_ts(x) if x else None) for e, s, x in rows]


def expired_events(path: Path) -> int:
    """The history's expiry events: one per share expired by an engine that
    keeps the history (our daemon), none for one that only updates rows."""
    with contextlib.closing(connect(path)) as conn:
        return conn.execute(f"SELECT COUNT(*) FROM {EVENT_TABLE} WHERE kind = 'expired'").fetchone()[0]


class Watcher:
    """The benchmark's own read-only view of progress: is any share due by a
    given instant still active? One statement per call, autocommit, so each
    call sees the latest commit; reads never block a WAL writer."""

    def __init__(self, path: Path):
        self.conn = connect(path)

    def any_active_due(self, until: float) -> bool:
        # LIMIT 1 on the partial index: O(log n) however many remain, so
        # polling every 10 ms does not steal a core from the engine.
        sql = f"SELECT 1 FROM {SHARE_TABLE} WHERE status = 'active' AND expires_at <= ? LIMIT 1"
        return self.conn.execute(sql, (format_ts(until),)).fetchone() is not None

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "Watcher":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
