"""What a public link sends: one of the share's files, or all of them as one
zip. Both are a known number of bytes with a strong ETag, sent in ranges,
so links.downloads serves them alike (checks, byte budget, resume)."""

import hashlib
from dataclasses import dataclass
from functools import cached_property

from django.core.files.storage import Storage

from links.archive import ArchiveEntry, ArchiveLayout
from sharing.models import Share, StoredFile
from sharing.models.downloads import Sending
from storage import store


class FileMissing(Exception):
    """Bytes the share points at are not in storage."""


@dataclass(frozen=True)
class FilePayload:
    stored: StoredFile

    @property
    def size(self) -> int:
        return self.stored.size

    @property
    def etag(self) -> str:
        return f'"{self.stored.sha256}"'  # strong: the sha256 of the exact bytes

    @property
    def content_type(self) -> str:
        return self.stored.content_type

    @property
    def filename(self) -> str:
        return self.stored.name

    @property
    def sending(self) -> Sending:
        return Sending(file_id=self.stored.pk, size=self.stored.size)

    def check_present(self) -> None:
        content = self.stored.content
        if not content.storage.exists(content.name):
            raise FileMissing(content.name)

    def open(self):
        """An open handle on the bytes (FileMissing when they are gone)."""
        try:
            return self.stored.content.storage.open(self.stored.content.name, "rb")
        except OSError:
            raise FileMissing(self.stored.content.name) from None


class ArchivePayload:
    """All of a share's files as one stored zip (links.archive): its length
    and every byte's place are known before the first byte is sent."""

    content_type = "application/zip"

    def __init__(self, share: Share):
        self.share = share
        self.files = share.files

    @cached_property
    def layout(self) -> ArchiveLayout:
        try:
            return ArchiveLayout([_entry(stored) for stored in self.files])
        except OSError as missing:
            raise FileMissing(str(missing)) from None

    @property
    def size(self) -> int:
        return self.layout.length

    @cached_property
    def etag(self) -> str:
        # The layout's fingerprint covers every name, size, CRC and offset;
        # the files' sha256 the data itself.
        digest = hashlib.sha256(self.layout.fingerprint.encode())
        for stored in self.files:
            digest.update(stored.sha256.encode())
        return f'"zip-{digest.hexdigest()[:40]}"'

    @property
    def filename(self) -> str:
        return f"shared-files-{self.share.token[:8]}.zip"

    @property
    def sending(self) -> Sending:
        # A copy of the share is each file's bytes once: the zip's headers are free.
        return Sending(file_id=None, counted=self.layout.data_bytes, size=self.size)

    def check_present(self) -> None:
        """Where asking is free (the disk), every file's bytes are there. A
        bucket is not asked: a HEAD per file would cost a zip of 500 files
        500 requests before its first byte (and a HEAD of the zip as many);
        a member gone from it is found by its own GET, which cuts the zip
        short before a wrong byte is sent (links.archive)."""
        for stored in self.files:
            if store.presence_is_free(stored.content.storage):
                FilePayload(stored).check_present()


def _entry(stored: StoredFile) -> ArchiveEntry:
    # Size and CRC-32 from the row: nothing is asked of the store until a
    # range needs the member's bytes, and then one read from there.
    return ArchiveEntry(
        name=stored.name,
        size=stored.size,
        crc32=stored.known_crc32(),
        modified=stored.created_at,
        open=lambda: _open(stored.content.storage, stored.content.name, stored.size),
    )


def _open(storage: Storage, name: str, size: int):
    try:
        return store.open_sized(storage, name, size)
    except OSError:
        raise FileMissing(name) from None
