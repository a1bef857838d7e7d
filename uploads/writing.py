"""Writing an upload's bytes, one request at a time, decided in the database.

A request that wants to append claims the upload with one conditional
UPDATE: it sets `writer` to a random token of its own where the offset is
the one the client sent, the upload is neither finished nor past its
deadline, and nobody holds a live claim. Exactly one of any number of
racing requests changes the row; the others get 409. The winner then reads
the body in pieces, outside any transaction (on SQLite a transaction would
hold the one write lock for as long as the client takes to send), writes
each piece at its place in the partial file with os.pwrite, and finally
moves the offset with another UPDATE that matches only while its token is
still there.

In a bucket the pieces go into the upload's parts instead
(storage.bucket_partials), and a chunk that does not end the upload must
carry at least least_chunk() bytes, refused unwritten otherwise
(uploads.endpoints): no request then reads back or rewrites the bytes
before its own.

A claim lasts CLAIM_TTL and is renewed (one UPDATE) whenever half of it
has gone by, before the next piece is written: a request that stalls longer
than that may be taken over, and then its renewal fails and it writes
nothing more, so two requests never write the same bytes. The same claim
covers the finish (uploads.finishing), so a crashed finisher's upload is
finished by the next request that finds its claim lapsed.
"""

import os
import secrets
import time
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.http import UnreadablePostError
from django.utils import timezone

from sharing.models.state import locked_now
from storage import store
from storage.writeback import Writeback
from uploads.models import (
    WRITER_LENGTH,
    Upload,
    partial_object,
    partial_path,
    renewed_deadline,
    unclaimed_q,
    upload_open_q,
)

CLAIM_TTL = timedelta(seconds=60)
# How much of the body is in memory at once.
READ_SIZE = 256 * 1024


class ClaimLost(Exception):
    """Another request took the upload over (or it was removed) while this
    one held it: this one must write nothing more."""


class WriteClaim:
    """The right to write to one upload, held by a token in its row."""

    def __init__(self, upload_id: str, token: str):
        self.upload_id = upload_id
        self.token = token
        self.renewed = time.monotonic()

    def mine(self):
        return Upload.objects.filter(pk=self.upload_id, writer=self.token)

    def keep(self) -> None:
        """Renew the claim if half of it has gone by; raise ClaimLost if it
        is no longer this request's."""
        if time.monotonic() - self.renewed < CLAIM_TTL.total_seconds() / 2:
            return
        if not self.mine().update(writing_until=timezone.now() + CLAIM_TTL):
            raise ClaimLost
        self.renewed = time.monotonic()

    def release(self) -> None:
        self.mine().update(writer=None, writing_until=None)


def claim(upload_id: str, owner, offset: int, now=None) -> WriteClaim | None:
    """Take the right to write at `offset`, or None when the offset is not
    the upload's, it is finished, past its deadline, gone, or being written.

    The deadline is judged by the time read once the row is locked (on
    SQLite: once the write lock is held), never before waiting for it;
    `now` stands in for that time only in tests."""
    token = secrets.token_urlsafe(16)[:WRITER_LENGTH]
    with transaction.atomic():
        locked = locked_now(Upload.objects.filter(pk=upload_id))
        now = locked if now is None else now
        taken = (
            Upload.objects.filter(upload_open_q(now), unclaimed_q(now), pk=upload_id, owner=owner, offset=offset)
            .filter(finished_at__isnull=True)
            .update(writer=token, writing_until=now + CLAIM_TTL)
        )
    return WriteClaim(upload_id, token) if taken else None


class Received:
    """What a request's body brought: how many bytes were written, whether
    the body arrived whole, and whether it matched its checksum."""

    def __init__(self, written: int, whole: bool, checksum_ok: bool):
        self.written = written
        self.whole = whole
        self.checksum_ok = checksum_ok


class Body:
    """A request body read in pieces of at most READ_SIZE, up to `size`
    bytes: the claim renewed before each piece is written, the checksum
    fed as they pass, what was read counted."""

    def __init__(self, stream, write_claim: WriteClaim, size: int, checksum):
        self.stream, self.write_claim, self.checksum = stream, write_claim, checksum
        self.remaining = size

    def __iter__(self):
        while self.remaining:
            try:
                piece = self.stream.read(min(READ_SIZE, self.remaining))
            except (UnreadablePostError, OSError):
                return  # the client went away
            if not piece:
                return
            self.write_claim.keep()
            self.remaining -= len(piece)
            if self.checksum is not None:
                self.checksum[1].update(piece)
            yield piece

    def received(self, written: int) -> Received:
        """What came, once the pieces are written: `written` bytes."""
        whole = self.remaining == 0
        checksum_ok = self.checksum is None or (whole and self.checksum[1].digest() == self.checksum[2])
        return Received(written, whole, checksum_ok)


def least_chunk(length: int) -> int:
    """The fewest bytes a chunk of an upload of `length` bytes may carry
    unless it ends the upload: any on the disk; in a bucket S3's smallest
    part (5 MiB), so that every chunk costs a bounded number of bucket
    requests and its own bytes' traffic (storage.bucket_partials)."""
    return store.least_append(length)


def page_chunk() -> int:
    """The chunk the web app's pages send (tus-js-client's chunkSize):
    TUS_WEB_CHUNK_BYTES, never more than TUS_MAX_CHUNK_BYTES, and in a
    bucket never less than the least chunk of the largest upload allowed."""
    sent = min(settings.TUS_WEB_CHUNK_BYTES, settings.TUS_MAX_CHUNK_BYTES)
    return max(sent, least_chunk(settings.MAX_UPLOAD_BYTES))


def too_small(offset: int, size: int, length: int) -> bool:
    """Whether a chunk of `size` bytes at `offset` is refused: it adds
    bytes, does not end the upload, and is under least_chunk."""
    return 0 < size < least_chunk(length) and offset + size < length


def receive(stream, write_claim: WriteClaim, start: int, size: int, checksum, length: int) -> Received:
    """Write up to `size` bytes of `stream` at `start` in the partial file
    of an upload of `length` bytes.

    A client that goes away mid-body leaves what arrived (tus: the server
    keeps it; in a bucket, the whole parts it sent); the caller decides
    whether to keep it (not when a checksum was sent: a partial body cannot
    be checked)."""
    body = Body(stream, write_claim, size, checksum)
    in_bucket = partial_object(write_claim.upload_id)
    if in_bucket is not None:
        return _receive_into_bucket(body, in_bucket.appender(start, size, length))
    fd = os.open(partial_path(write_claim.upload_id), os.O_WRONLY)
    position = start
    writeback = Writeback(fd, start)  # so the closing sync has little left to do
    try:
        for piece in body:
            view = memoryview(piece)
            while view:
                done = os.pwrite(fd, view, position)
                position += done
                view = view[done:]
            if writeback.due(position):
                writeback.hand_over(position)
        # The offset is about to say these bytes are stored: make it true
        # across a crash of the machine too.
        os.fdatasync(fd)
    finally:
        os.close(fd)
    return body.received(position - start)


def _receive_into_bucket(body: Body, appender) -> Received:
    """receive() for a bucket: the body's bytes go into the upload's parts as
    they arrive (storage.bucket_partials), its last part once it has come
    whole and matched its checksum. A body cut short keeps the parts it
    filled; the bytes past them were never sent anywhere."""
    for piece in body:
        appender.write(piece)
    arrived = body.received(0)
    if arrived.whole and arrived.checksum_ok:
        appender.finish()
    else:
        appender.drop()
    return body.received(appender.kept)


def commit(write_claim: WriteClaim, start: int, kept: int, length: int) -> bool:
    """Move the offset past the `kept` bytes and let the upload go, or keep
    the claim for the finish when they complete it. False when the claim was
    lost (another request or the upload's removal came first)."""
    now = timezone.now()
    changes = {"offset": start + kept}
    if kept:
        changes["expires_at"] = renewed_deadline(now)
    if start + kept < length:
        changes.update(writer=None, writing_until=None)
    else:
        changes["writing_until"] = now + CLAIM_TTL
    return bool(write_claim.mine().filter(offset=start).update(**changes))
