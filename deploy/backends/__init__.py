"""The lock that makes one starting process migrate while the others wait.

Containers started together (two web nodes and a daemon) each run the
migrations on start. Django's migrate is not safe to run twice at once: two
processes both see a migration unapplied and both apply it, and the second
fails half-way (a table that already exists). Under this lock the first
migrates and the others then find nothing to do.

PostgreSQL: a session advisory lock, held by the connection that migrates
(the server lets it go if that process dies). SQLite: an exclusive flock()
on a file beside the database, which every process using it can reach (the
kernel lets it go with its holder, SIGKILL included).
"""

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from django.db import connections

# pg_advisory_lock's key: any 64-bit number no other part of a database
# shared with other applications is likely to use ("microcloud" in ASCII).
ADVISORY_KEY = 0x6D6963726F636C6F
LOCK_SUFFIX = ".migrate.lock"


@contextlib.contextmanager
def migration_lock(using: str = "default") -> Iterator[None]:
    """Hold the database's migration lock for the block (waiting for it)."""
    connection = connections[using]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [ADVISORY_KEY])
        try:
            yield
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [ADVISORY_KEY])
        return
    if connection.vendor != "sqlite" or connection.is_in_memory_db():
        yield  # nobody else can reach this database
        return
    path = Path(f"{connection.settings_dict['NAME']}{LOCK_SUFFIX}")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # its only descriptor: the lock goes with it
