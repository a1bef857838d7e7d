"""Moving stored files' bytes between the local disk (MEDIA_ROOT) and the
bucket STORAGE_URL names, in either direction (`manage.py movefiles`).

A file keeps its name: its stored name (files/2026/11/<hex>) is the file's
path under MEDIA_ROOT and its key under the bucket's prefix alike, so the
bytes are copied under the same name and no row changes. Which files there
are comes from a catalogue the caller gives (the domain's stored files,
sharing.catalogue): this module knows bytes, not what holds them.
Which side the service reads from is decided by STORAGE_URL alone, when it
is next started.

Each file is copied streamed (the source opened for reading, the target's
`save` reading it in chunks), then read back from the target and its
SHA-256 compared with the row's: only a copy that matches counts as moved,
and only then may the source be removed (`delete_source`). A copy that does
not match is removed again, so that no later run takes it for done.

The catalogue's entries are read in key order, a batch at a time, up to the last
one there when the run started: a file uploaded during the run is left for
the next run, and a file deleted during it is passed over. A run that is
interrupted (a kill, a lost connection) starts again where it stopped: a
file whose target already holds as many bytes as the row says is skipped
(and first read back and checked with `verify_existing`).
"""

import contextlib
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.files.storage import Storage

from storage.buckets import BucketStorage
from storage.disk import DurableFileSystemStorage

DISK = "disk"
BUCKET = "bucket"
CHUNK = 1024 * 1024
BATCH = 500
BUCKET_BACKEND = f"{BucketStorage.__module__}.{BucketStorage.__qualname__}"


def disk_storage() -> Storage:
    return DurableFileSystemStorage(location=settings.MEDIA_ROOT)


def bucket_storage() -> Storage:
    """The bucket STORAGE_URL names, built from the STORAGES entry the
    settings parse it into; ImproperlyConfigured without one."""
    if not settings.STORAGE_URL.strip():
        raise ImproperlyConfigured(
            "STORAGE_URL is not set: set it to the bucket to move files to or from "
            "(s3://BUCKET[/PREFIX]?endpoint=...&region=...)"
        )
    entry = settings.STORAGES["default"]
    if entry.get("BACKEND") != BUCKET_BACKEND:
        raise ImproperlyConfigured(f"STORAGE_URL is set but STORAGES['default'] is not {BUCKET_BACKEND}")
    return BucketStorage(**entry.get("OPTIONS", {}))


@dataclass(frozen=True)
class Entry:
    """One file as the catalogue lists it."""

    key: int
    name: str  # its stored name, the same on both sides
    size: int
    sha256: str
    label: str  # how reports name it


class Catalogue(Protocol):
    def totals(self) -> tuple[int, int, int]:
        """The last key, the number of files and their bytes, read together."""

    def page(self, after: int, last: int, limit: int) -> list[Entry]:
        """Up to `limit` entries with keys in (after, last], in key order."""

    def still_listed(self, entry: Entry) -> bool:
        """Whether the file is still there (not deleted during the run)."""


@dataclass
class Tally:
    """What a run did so far; `done_*` counts every file looked at, whatever
    became of it, against the totals known when the run started."""

    total_files: int = 0
    total_bytes: int = 0
    done_files: int = 0
    done_bytes: int = 0
    moved: int = 0
    moved_bytes: int = 0
    skipped: int = 0
    failed: int = 0

    def summary(self, dry_run: bool = False) -> str:
        verb = "would move" if dry_run else "moved"
        return (
            f"{verb} {self.moved} files ({self.moved_bytes} bytes), "
            f"skipped {self.skipped} already there, {self.failed} failed"
        )


class CopyFailed(Exception):
    """One file could not be moved; the message says why."""


class Mover:
    """Copy every stored file's bytes from `source` to `target`.

    `report(line)` receives a line for each file that failed or was passed
    over, `listed(line)` one for each file a dry run would copy, and
    `progress(tally)` is called after each file.
    """

    def __init__(
        self,
        *,
        catalogue: Catalogue,
        source: Storage,
        target: Storage,
        verify_existing: bool = False,
        delete_source: bool = False,
        dry_run: bool = False,
        report: Callable[[str], None] = lambda line: None,
        listed: Callable[[str], None] = lambda line: None,
        progress: Callable[[Tally], None] = lambda tally: None,
        batch: int = BATCH,
    ):
        self.catalogue, self.source, self.target = catalogue, source, target
        self.verify_existing, self.delete_source, self.dry_run = verify_existing, delete_source, dry_run
        self.report, self.listed, self.progress, self.batch = report, listed, progress, batch
        self.tally = Tally()

    @classmethod
    def to(cls, destination: str, **options) -> "Mover":
        """A mover from the other side to `destination` (DISK or BUCKET)."""
        if destination == BUCKET:
            return cls(source=disk_storage(), target=bucket_storage(), **options)
        if destination == DISK:
            return cls(source=bucket_storage(), target=disk_storage(), **options)
        raise ValueError(f"destination must be {DISK!r} or {BUCKET!r}, not {destination!r}")

    def run(self) -> Tally:
        last, self.tally.total_files, self.tally.total_bytes = self.catalogue.totals()
        after = 0
        while True:
            entries = self.catalogue.page(after, last, self.batch)
            if not entries:
                return self.tally
            for stored in entries:
                self._one(stored)
                self.tally.done_files += 1
                self.tally.done_bytes += stored.size
                self.progress(self.tally)
            after = entries[-1].key

    def _one(self, stored: Entry) -> None:
        label = stored.label
        try:
            outcome = self._move(stored)
        # Any error (a storage, the network) fails this file, reported by
        # name; the run goes on with the next one.
        except Exception as error:
            if not self.catalogue.still_listed(stored):
                self.report(f"passed over {label}: deleted during the run")
                return
            self.tally.failed += 1
            reason = error if isinstance(error, CopyFailed) else f"{type(error).__name__}: {error}"
            self.report(f"FAILED {label}: {reason}")
            return
        if outcome == "skipped":
            self.tally.skipped += 1
        else:
            self.tally.moved += 1
            self.tally.moved_bytes += stored.size
            if self.dry_run:
                self.listed(f"would copy {label}, {stored.size} bytes")

    def _move(self, stored: Entry) -> str:
        """Move one file's bytes: "skipped" or "moved"; CopyFailed otherwise."""
        name = stored.name
        held = size_of(self.target, name)
        if held == stored.size:
            # With delete_source the copy is the only one left afterwards,
            # so it is read back whether or not verify_existing asked for it.
            check = self.verify_existing or (self.delete_source and self.source.exists(name))
            if not check:
                return "skipped"
            if sha256_of(self.target, name) == stored.sha256:
                if self.delete_source and not self.dry_run:
                    self.source.delete(name)
                return "skipped"
        if self.dry_run:
            if size_of(self.source, name) is None:
                raise CopyFailed("missing from the source")
            return "moved"
        self._copy(name, replace=held is not None)
        digest = sha256_of(self.target, name)
        if digest != stored.sha256:
            self.target.delete(name)
            raise CopyFailed(f"the copy's sha256 is {digest}, the file's is {stored.sha256}; copy removed")
        if self.delete_source:
            self.source.delete(name)
        return "moved"

    def _copy(self, name: str, *, replace: bool) -> None:
        try:
            handle = self.source.open(name, "rb")
        except FileNotFoundError:
            raise CopyFailed("missing from the source") from None
        with handle:
            if replace:
                # A disk storage would save beside an existing file under
                # another name; the copy must keep this one.
                self.target.delete(name)
            try:
                saved = self.target.save(name, handle)
            except Exception:
                # A failed save may leave part of the file on a disk, or all
                # of it unsynced: nothing a later run should take for a copy.
                with contextlib.suppress(Exception):
                    self.target.delete(name)
                raise
        if saved != name:
            self.target.delete(saved)
            raise CopyFailed(f"the target stored it as {saved} (another process wrote {name} meanwhile)")


def size_of(storage: Storage, name: str) -> int | None:
    """The size of `name` in `storage`, None when it is not there."""
    try:
        return storage.size(name)
    except FileNotFoundError:
        return None


def sha256_of(storage: Storage, name: str) -> str | None:
    """The hex SHA-256 of `name`'s bytes in `storage`, read in chunks; None
    when it is not there."""
    digest = hashlib.sha256()
    try:
        with storage.open(name, "rb") as handle:
            for chunk in iter(lambda: handle.read(CHUNK), b""):
                digest.update(chunk)
    except FileNotFoundError:
        return None
    return digest.hexdigest()
