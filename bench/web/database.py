"""The benchmark's own databases and the environment of the processes using them.

SQLite: a fresh file in the work directory. PostgreSQL: a database created on
the server at --pg-url and dropped at the end, whatever happens. Either is
migrated with the project's own migrations, then seeded (bench/web/seed.py)
before gunicorn starts.
"""

import contextlib
import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
from psycopg import sql

from bench.db import REPO_ROOT

DEFAULT_PG_URL = "postgres://postgres@127.0.0.1:5432/postgres"
# Variables of the developer's shell that would point the app elsewhere.
# (STORAGE_URL: the bucket pass sets its own, the disk pass none.)
DROPPED_ENV = {
    "DATABASE_URL",
    "SQLITE_PATH",
    "STATIC_ROOT",
    "MEDIA_ROOT",
    "STORAGE_URL",
    "DJANGO_SETTINGS_MODULE",
    "DEBUG",
}


@dataclass(frozen=True)
class Database:
    vendor: str  # "sqlite" or "postgresql"
    url: str  # the app's DATABASE_URL
    version: str


@contextlib.contextmanager
def sqlite_database(workdir: Path) -> Iterator[Database]:
    import sqlite3

    path = workdir / "web.sqlite3"
    try:
        yield Database("sqlite", f"sqlite:///{path}", sqlite3.sqlite_version)
    finally:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)


@contextlib.contextmanager
def postgres_database(server_url: str) -> Iterator[Database]:
    """A database of our own on the server at `server_url`, dropped at the end."""
    name = f"bench_web_{os.getpid()}"
    statement = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
    with psycopg.connect(server_url, autocommit=True, connect_timeout=5) as conn:
        version = conn.execute("SHOW server_version").fetchone()[0].split()[0]
        conn.execute(statement)  # left behind by a killed run with our pid
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield Database("postgresql", urlsplit(server_url)._replace(path=f"/{name}").geturl(), version)
    finally:
        with psycopg.connect(server_url, autocommit=True, connect_timeout=5) as conn:
            conn.execute(statement)


def app_env(database: Database, *, static_root: Path, media_root: Path, upload_limit: int) -> dict[str, str]:
    """The environment of manage.py, the seeder and gunicorn for one database.

    DEBUG off as in production, so SECRET_KEY must be set: a random one per run.
    """
    env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV and not k.startswith("EXPIRY_")}
    env.update(
        DATABASE_URL=database.url,
        STATIC_ROOT=str(static_root),
        MEDIA_ROOT=str(media_root),
        MAX_UPLOAD_BYTES=str(upload_limit),
        SECRET_KEY=secrets.token_urlsafe(50),
        DEBUG="false",
        LOG_LEVEL="WARNING",
        DJANGO_SETTINGS_MODULE="bench.web.settings",
        PYTHONUNBUFFERED="1",
        # All load comes from 127.0.0.1: the per-address limit on public links
        # would measure itself. Its counters still run (a file of this run's own).
        LINK_RATE_LIMIT="1000000000",
        RATELIMIT_SQLITE_PATH=str(media_root.parent / "ratelimit.sqlite3"),
    )
    return env


def migrate(env: dict[str, str]) -> None:
    """Migrate, and collect the static files into the run's STATIC_ROOT as
    `make run` does (pages link them by their hashed names)."""
    for command in (["migrate"], ["collectstatic"]):
        subprocess.run(
            [sys.executable, "manage.py", *command, "--noinput", "--verbosity", "0"],
            cwd=REPO_ROOT,
            env=env,
            check=True,
            timeout=300,
            capture_output=True,
        )


def seed(env: dict[str, str], files: dict[str, Path], list_shares: int, zip_parts: Sequence[Path] = ()) -> dict:
    """Users, tokens, files and shares for the scenarios (see seed.py);
    `zip_parts`: the files of the one share sent as a zip."""
    command = [sys.executable, "-m", "bench.web.seed", "--list-shares", str(list_shares)]
    for key, path in files.items():
        command += ["--file", f"{key}={path}"]
    for path in zip_parts:
        command += ["--zip-file", str(path)]
    done = subprocess.run(command, cwd=REPO_ROOT, env=env, check=True, timeout=300, capture_output=True, text=True)
    return json.loads(done.stdout)
