"""Restoring a backup, into an empty state only.

Empty: the database has no user, no stored file and no share (a database
just migrated is empty; so is one not created yet), and the store holds
none of the backup's names. Anything else is refused before anything is
written: a restore never merges into, or overwrites, a service in use.
Every copied file's bytes are checked against the manifest's sha256 before
the database is touched, so a damaged backup is refused whole.
"""

import hashlib
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.files import File
from django.db import DatabaseError, connection

from backups.backends import DATABASE_FILE, copies_database, restore_database
from backups.manifest import Manifest, safe_path
from sharing.models import Share, StoredFile
from storage.store import files

CHUNK = 1024 * 1024


class RestoreRefused(Exception):
    """Said to the operator as it is; nothing was written."""


def restore_backup(folder: Path) -> Manifest:
    folder = Path(folder)
    try:
        manifest = Manifest.read(folder)
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise RestoreRefused(f"{folder} holds no readable backup: {error}") from None
    # PostgreSQL: the database comes back with pg_restore first (into a new
    # database); only the files' bytes are restored here.
    if copies_database():
        if not (folder / DATABASE_FILE).is_file():
            raise RestoreRefused(f"{folder} has no {DATABASE_FILE}")
        if in_use():
            raise RestoreRefused("the database is not empty (users, files or shares): restore into a new state only")
    store = files()
    copied = [entry for entry in manifest.entries if entry.bytes == "copied"]
    for entry in copied:
        if store.exists(entry.name):
            raise RestoreRefused(f"the file store already holds {entry.name}: restore into an empty store only")
        if digest(safe_path(folder, entry.name)) != entry.sha256:
            raise RestoreRefused(f"the backup's bytes of {entry.name} do not match its manifest")
    if copies_database():
        restore_database(folder)
    for entry in copied:
        with open(safe_path(folder, entry.name), "rb") as handle:
            saved = store.save(entry.name, File(handle))
        if saved != entry.name:
            raise RestoreRefused(f"the store saved {entry.name} as {saved}")
    return manifest


def in_use() -> bool:
    """Whether the database holds anything of a service (a fresh one does not)."""
    if StoredFile._meta.db_table not in connection.introspection.table_names():
        return False
    try:
        return get_user_model().objects.exists() or StoredFile.objects.exists() or Share.objects.exists()
    except DatabaseError:  # an older schema half there: not ours to overwrite
        return True


def digest(path: Path) -> str | None:
    try:
        with open(path, "rb") as handle:
            hasher = hashlib.sha256()
            while chunk := handle.read(CHUNK):
                hasher.update(chunk)
            return hasher.hexdigest()
    except FileNotFoundError:
        return None
