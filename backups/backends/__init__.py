"""The database's part of a backup, per database.

SQLite: the online backup API copies the database in one step, as one
read transaction sees it: one committed state, while writers go on beside
it (WAL). The stored files are listed from that copy, so the manifest and
the copied database agree row for row. Restoring copies the
pages back the same way, into the (empty) database the settings name.

PostgreSQL: pg_dump is the consistent copy (one snapshot, the service
running); this command lists the files from the live database just after,
so it may list files the dump lacks (uploaded in between), never the
reverse unless a file was deleted in between (docs/deployment.md, "Backups").
"""

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from django.db import connection

from sharing.models import StoredFile

DATABASE_FILE = "db.sqlite3"


@dataclass(frozen=True)
class Listed:
    name: str
    size: int
    sha256: str


def copies_database() -> bool:
    """Whether this command copies the database itself (SQLite), or pg_dump must."""
    return connection.vendor == "sqlite"


def copy_database(folder: Path) -> list[Listed]:
    """Copy the database into `folder` (SQLite) and return the stored files
    of that copy; elsewhere, the stored files of the live database."""
    if not copies_database():
        return [Listed(*row) for row in StoredFile.objects.order_by("id").values_list("content", "size", "sha256")]
    connection.ensure_connection()
    target = sqlite3.connect(folder / DATABASE_FILE)
    try:
        connection.connection.backup(target)
        table = StoredFile._meta.db_table
        column = StoredFile._meta.get_field("content").column
        rows = target.execute(f'SELECT "{column}", size, sha256 FROM "{table}" ORDER BY id').fetchall()
    finally:
        target.close()
    return [Listed(*row) for row in rows]


def restore_database(folder: Path) -> None:
    """Copy the backup's database over the one the settings name (SQLite)."""
    source = sqlite3.connect(f"file:{folder / DATABASE_FILE}?mode=ro", uri=True)
    try:
        connection.ensure_connection()
        source.backup(connection.connection)
    finally:
        source.close()
