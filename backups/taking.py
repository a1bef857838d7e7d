"""Taking a backup: the database as of one instant, then its files' bytes.

The order makes it whole: a stored file's bytes are on the disk (synced) or
in the bucket before its row commits (storage/, sharing.models.files), so
every file the copied database lists has its bytes in the store by the
time they are copied, however many uploads run meanwhile. An upload that
commits after the copy is simply not in this backup; an unfinished
resumable upload's row is, without its partial bytes (it cannot be
resumed after a restore and lapses as any abandoned upload does). Only a
file deleted between the copy and its turn has no bytes left to copy: it is
marked "missing".
"""

import hashlib
import os
from pathlib import Path

from django.utils import timezone

from backups.backends import DATABASE_FILE, copies_database, copy_database
from backups.manifest import Entry, Manifest, safe_path
from storage.store import files

CHUNK = 1024 * 1024


class BackupRefused(Exception):
    """Said to the operator as it is; nothing was written."""


def take_backup(folder: Path, *, copy_bytes: bool) -> Manifest:
    folder = Path(folder)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise BackupRefused(f"{folder} exists and is not an empty folder: give a new one")
    folder.mkdir(parents=True, exist_ok=True)
    taken_at = timezone.now().isoformat()
    listed = copy_database(folder)
    entries = []
    for item in listed:
        state = copy_file(folder, item.name, item.sha256) if copy_bytes else "not copied"
        entries.append(Entry(name=item.name, size=item.size, sha256=item.sha256, bytes=state))
    manifest = Manifest(taken_at=taken_at, database=DATABASE_FILE if copies_database() else "pg_dump", entries=entries)
    manifest.write(folder)
    return manifest


def copy_file(folder: Path, name: str, sha256: str) -> str:
    target = safe_path(folder, name)
    target.parent.mkdir(parents=True, exist_ok=True)
    store = files()
    try:
        source = store.open(name, "rb")
    except FileNotFoundError:
        return "missing"
    digest = hashlib.sha256()
    with source, open(target, "wb") as sink:
        while chunk := source.read(CHUNK):
            digest.update(chunk)
            sink.write(chunk)
        sink.flush()
        os.fsync(sink.fileno())
    if digest.hexdigest() != sha256:
        target.unlink()
        raise BackupRefused(f"the bytes of {name} do not match the sha256 the database has for them")
    return "copied"
