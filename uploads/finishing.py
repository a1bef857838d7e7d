"""Turning a complete upload into a stored file, exactly once.

The bytes go through StoredFile.create_from_upload, the path every upload
takes (name and type rules, size, SHA-256 and CRC-32 in one pass), read
from the partial file; the upload is marked finished in the
transaction that stores the file's row, by an UPDATE that matches only while
this request still holds the upload's claim and it is not finished yet. So a
file is listed only once its bytes are all stored, and of two finishers (one
whose claim lapsed while it worked, and the one that took over) exactly one
stores a row: the other's transaction rolls back, its bytes go, and the
owner's quota counts the file once (the reservation made at creation turns
into it in the same transaction).
"""

import contextlib
import os
from functools import partial

from django.core.files import File

from sharing.models import StoredFile
from sharing.models.files import Superseded
from sharing.models.state import locked_now
from storage import store
from storage.stored import Digests, new_name
from storage.upload_handlers import StoredUpload
from uploads.models import (
    Upload,
    discard_partial_file,
    partial_object,
    partial_path,
    renewed_deadline,
    store_link,
    upload_open_q,
)
from uploads.signals import upload_finished
from uploads.writing import WriteClaim


class PartialBytes(File):
    """The partial file as create_from_upload reads it: the upload's name
    and type, and the claim kept alive while a big file is read (twice:
    once for the digests, once into storage)."""

    def __init__(self, handle, upload: Upload, write_claim: WriteClaim):
        super().__init__(handle, name=upload.filename)
        # Empty: create_from_upload guesses the type from the name.
        self.content_type = upload.content_type
        self.write_claim = write_claim

    def chunks(self, chunk_size=None):
        for chunk in super().chunks(chunk_size):
            self.write_claim.keep()
            yield chunk


class LinkedPartialBytes(PartialBytes):
    """The partial file, with a second name the storage may take (rename)
    instead of copying the bytes: read once for the digests, never written
    again (a gigabyte's copy was a third of a tus upload's time). The partial
    file keeps its own name until the row commits, so an upload whose file
    was not stored in the end can still be finished."""

    def __init__(self, handle, upload: Upload, write_claim: WriteClaim, link: str):
        super().__init__(handle, upload, write_claim)
        self.link = link

    def temporary_file_path(self) -> str:
        # Django's FileSystemStorage moves a file that has one (file_move_safe).
        return self.link


def partial_bytes(handle, upload: Upload, write_claim: WriteClaim) -> PartialBytes:
    """The partial file as the storage should take it: by a hard link when
    the file system allows one (the same one as the storage's), else copied."""
    link = str(store_link(upload.pk))
    with contextlib.suppress(FileNotFoundError):
        os.unlink(link)  # left by a finisher that died after linking
    try:
        os.link(partial_path(upload.pk), link)
    except OSError:
        return PartialBytes(handle, upload, write_claim)
    return LinkedPartialBytes(handle, upload, write_claim, link)


class BytesMissing(Exception):
    """The partial file is shorter than the offset says (removed, or lost)."""


def finish(upload: Upload, write_claim: WriteClaim) -> StoredFile | None:
    """Store the complete upload as a file of its owner's and mark it
    finished; None when another request finished it first (or it was
    removed meanwhile). The caller holds `write_claim`; it is released either way."""
    try:
        in_bucket = partial_object(upload.pk)
        if in_bucket is not None:
            stored = _store_from_bucket(upload, write_claim, in_bucket)
            discard_partial_file(upload.pk)
            return stored
        path = partial_path(upload.pk)
        try:
            with open(path, "r+b") as handle:
                if os.fstat(handle.fileno()).st_size < upload.length:
                    raise BytesMissing
                # Bytes past the end can only be a discarded chunk's: never stored.
                handle.truncate(upload.length)
                content = partial_bytes(handle, upload, write_claim)
                try:
                    stored = StoredFile.create_from_upload(
                        owner=upload.owner,
                        upload=content,
                        delete_when_unshared=upload.delete_when_unshared,
                        reserved=upload.length,  # set aside when the upload was created
                        reserved_by=upload.reserved_by,
                        still_wanted=partial(mark_finished, write_claim),
                    )
                finally:
                    if isinstance(content, LinkedPartialBytes):  # not taken by the storage
                        with contextlib.suppress(FileNotFoundError):
                            os.unlink(content.link)
        except FileNotFoundError:
            raise BytesMissing from None
    except Superseded:
        write_claim.release()
        return None
    except BaseException:
        write_claim.release()
        raise
    discard_partial_file(upload.pk)
    return stored


def _store_from_bucket(upload: Upload, write_claim: WriteClaim, in_bucket) -> StoredFile:
    """finish() for a bucket: join the parts into one object, copy it (in
    the bucket) under a new file's name, read it once for the digests, and
    let create_from_upload adopt it. The copy is this finisher's own: one
    that loses to another finisher deletes only its copy."""
    storage = store.files()
    try:
        in_bucket.complete(upload.length)
    except FileNotFoundError:
        # Another finisher (whose claim lapsed) completed it first, or it is gone.
        if not storage.exists(f"uploads/partial/{upload.pk}"):
            raise BytesMissing from None
    name = new_name()
    storage.copy(f"uploads/partial/{upload.pk}", name)
    digests = Digests()
    with storage.open(name, "rb") as handle:
        for chunk in handle.chunks(1024 * 1024):
            write_claim.keep()
            digests.update(chunk)
    if digests.size != upload.length:
        storage.delete(name)
        raise BytesMissing
    content = StoredUpload(
        name=upload.filename,
        stored_name=name,
        size=upload.length,
        content_type=upload.content_type,
        charset=None,
        digests=digests,
    )
    return StoredFile.create_from_upload(
        owner=upload.owner,
        upload=content,
        delete_when_unshared=upload.delete_when_unshared,
        reserved=upload.length,
        reserved_by=upload.reserved_by,
        still_wanted=partial(mark_finished, write_claim),
    )


def mark_finished(write_claim: WriteClaim, stored: StoredFile) -> bool:
    """In the transaction that stores the file: the upload is finished with
    it, if this request still holds the claim, nobody finished it first and
    its deadline has not passed (by the time read once its row is locked: an
    upload request's uploads end with the request). Otherwise the file is
    not stored at all (never listed, never counted)."""
    now = locked_now(write_claim.mine())
    finished = (
        write_claim.mine()
        .filter(upload_open_q(now), finished_at__isnull=True)
        .update(finished_at=now, file=stored, writer=None, writing_until=None, expires_at=renewed_deadline(now))
    )
    if finished:
        upload_finished.send(sender=Upload, upload_id=write_claim.upload_id, file=stored)
    return bool(finished)
