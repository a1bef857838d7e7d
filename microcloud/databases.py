"""The database settings from DATABASE_URL, with the project's own backends.

SQLite (WAL) is the embedded default; a postgres:// URL selects PostgreSQL.
Either way the ENGINE is the project's wrapper of Django's backend
(sqlite_writers, postgres_backend), with the options and test database names
this project needs.
"""

import os
import tempfile
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from microcloud.env import envbool, envfloat, envint


def database_from_url(url: str) -> dict:
    """The `default` entry of DATABASES for `url`."""
    try:
        db = dj_database_url.parse(
            url,
            conn_max_age=envint("DB_CONN_MAX_AGE", 60),
            conn_health_checks=True,
        )
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_URL is not a database URL: {exc}") from None
    if db["ENGINE"] == "django.db.backends.sqlite3":
        # Django's backend, with writers queued in the kernel rather than in
        # SQLite's sleeping busy handler (sqlite_writers.queue).
        db["ENGINE"] = "sqlite_writers"
        db["OPTIONS"] = {
            # IMMEDIATE: a transaction takes the write lock when it begins, so a
            # read-then-write never fails with "database is locked" half-way (a
            # plain BEGIN does, at once and whatever the timeout).
            "transaction_mode": "IMMEDIATE",
            # Seconds a writer waits for the lock before giving up.
            "timeout": envfloat("SQLITE_BUSY_TIMEOUT", 20.0),
            # WAL lets readers run beside the writer; NORMAL makes a commit ~9 us
            # instead of ~0.15 ms and is still durable against process crashes.
            # 2 KiB pages for new databases: an expiry dirties a few pages far
            # apart, and half the bytes made it ~10 % cheaper (docs/benchmarks.md, "CPU per expiry").
            "init_command": "PRAGMA page_size=2048; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
        # Tests use a file, not :memory:, so threads, the expiry daemon started as
        # a subprocess and the concurrency tests all see one real database.
        # One file per test run (pid), so two runs on one machine never share it.
        default_test_path = Path(tempfile.gettempdir()) / f"microcloud-test-{os.getpid()}.sqlite3"
        db["TEST"] = {"NAME": os.environ.get("TEST_SQLITE_PATH", str(default_test_path))}
        db["CONN_MAX_AGE"] = 0 if db["NAME"] == ":memory:" else db["CONN_MAX_AGE"]
    elif db["ENGINE"] == "django.db.backends.postgresql":
        # Django's backend, with a per-request health check that reads the
        # socket before it spends a round trip on SELECT 1 (postgres_backend).
        db["ENGINE"] = "postgres_backend"
        # One test database per run (pid), so concurrent runs against one server
        # never share or drop each other's; pytest-django drops it at the end.
        db["TEST"] = {"NAME": os.environ.get("TEST_DATABASE_NAME") or f"test_microcloud_{os.getpid()}"}
        # Parameters bound on the server, and a statement run DB_PREPARE_THRESHOLD
        # times on a connection prepared there: planning the same few statements
        # again on every request cost PostgreSQL about as much CPU as running them
        # (a public download went from ~3.4 to ~2.4 ms). Behind PgBouncer in
        # transaction mode, give it max_prepared_statements or set the threshold
        # to 0 (never prepare; see docs/deployment.md).
        threshold = envint("DB_PREPARE_THRESHOLD", 2, minimum=0)
        db["OPTIONS"] = {
            **db.get("OPTIONS", {}),
            "server_side_binding": envbool("DB_SERVER_SIDE_BINDING", True),
            "prepare_threshold": threshold or None,
        }
    return db
