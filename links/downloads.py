"""Send a share's bytes: reserve them, then stream.

Every response that sends bytes is allowed by Share.reserve_bytes (one
conditional UPDATE under the row's lock): on a link with a download limit it
takes the response's range out of the link's byte budget, whatever the
range, so no mix of whole files, ranges and parallel connections gets more
out of the link than its limit allows, and a resume needs no cookie. When
the response closes, its Reservation settles: what was never sent goes back
to the budget (a client that read a little and left costs little). A
response that starts at byte 0 counts a download; HEAD counts nothing.

With DOWNLOAD_OFFLOAD, a whole-file GET of a link without a limit is sent by
the front server (X-Accel-Redirect / X-Sendfile) once it is allowed here.
Links with a limit are always streamed here: only this process sees how many
bytes left, and the budget is kept in bytes.
"""

import logging
from http import HTTPStatus

from django.conf import settings
from django.http import FileResponse, HttpResponse

from links.delivery import Delivery
from links.guards import visitor
from links.preconditions import precondition_status
from links.ranges import ByteRange, Unsatisfiable, requested_range
from sharing.disposition import attachment
from sharing.models import Share

logger = logging.getLogger(__name__)

# Read and write in 256 KiB pieces: 4 KiB (FileResponse's default) costs a
# Python round trip per page of a 100 MB file.
BLOCK_SIZE = 256 * 1024
PLAIN = "text/plain; charset=utf-8"


class FileMissing(Exception):
    """The share's file has no bytes in storage."""


def etag_of(share: Share) -> str:
    return f'"{share.file.sha256}"'  # strong: the sha256 of the exact bytes


def serve(request, share: Share) -> HttpResponse | None:
    """Return the response that sends the file (or a 416), or None when the
    link may not send it (ended, unshared, or its budget does not hold the
    range; re-read the share to say which)."""
    stored = share.file
    verdict = precondition_status(request.headers, etag_of(share))
    if verdict is not None:
        # Nothing of the file is sent: nothing is reserved or counted.
        text = "" if verdict == HTTPStatus.NOT_MODIFIED else "The file's ETag does not match If-Match.\n"
        return _common_headers(HttpResponse(text, status=verdict, content_type=PLAIN), share)
    try:
        byte_range = requested_range(
            request.headers.get("Range"), stored.size, if_range=request.headers.get("If-Range"), etag=etag_of(share)
        )
    except Unsatisfiable:
        text = f"The range starts past the end of the file ({stored.size} bytes).\n"
        response = HttpResponse(text, status=HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE, content_type=PLAIN)
        response["Content-Range"] = f"bytes */{stored.size}"
        return _common_headers(response, share)
    first, end = (byte_range.first, byte_range.end) if byte_range else (0, stored.size)

    if request.method == "HEAD":
        if not stored.content.storage.exists(stored.content.name):
            raise FileMissing
        response = HttpResponse(status=206 if byte_range else 200, content_type=stored.content_type)
        response["Content-Disposition"] = attachment(stored.name)
        return _file_headers(response, share, byte_range, end - first)

    # An ephemeral file may lose its bytes the moment its link ends: only a
    # handle opened before the reservation can still send them.
    if (
        settings.DOWNLOAD_OFFLOAD
        and byte_range is None
        and share.max_downloads is None
        and not stored.delete_when_unshared
    ):
        return offload(request, share)

    try:
        handle = stored.content.storage.open(stored.content.name, "rb")
    except OSError:
        raise FileMissing from None
    delivery = Delivery.of(request)  # before any byte of this response is written
    try:
        reservation = share.reserve_bytes(first=first, end=end, visitor=visitor(request))
    except BaseException:
        handle.close()
        raise
    if reservation is None:
        handle.close()
        return None

    if reservation.budgeted:
        delivery.hold_to(settings.DOWNLOAD_STALL_TIMEOUT)
    body = RangeReader(handle, first, end, on_close=reservation.settle, delivery=delivery)
    response = FileResponse(
        body,
        status=206 if byte_range else 200,
        as_attachment=True,
        filename=stored.name,
        content_type=stored.content_type,
    )
    response.block_size = BLOCK_SIZE
    response["Content-Disposition"] = attachment(stored.name)
    return _file_headers(response, share, byte_range, end - first)


def offload(request, share: Share) -> HttpResponse | None:
    """Allow a whole-file download of a link without a limit, then hand the
    sending to the front server.

    The checks (expiry, password) and the count are made here, as for a
    streamed download; the front server only sends bytes. Should the link
    have gained a limit since it was read, the reservation settles at once as
    if the whole file was sent (Django cannot see how far the front server
    gets; counting it all is the safe direction).
    """
    stored = share.file
    if not stored.content.storage.exists(stored.content.name):
        raise FileMissing
    reservation = share.reserve_bytes(first=0, end=stored.size, visitor=visitor(request))
    if reservation is None:
        return None
    reservation.settle(reservation.end)
    response = HttpResponse(status=200, content_type=stored.content_type)
    response["Content-Disposition"] = attachment(stored.name)
    if settings.DOWNLOAD_OFFLOAD == "x-accel-redirect":
        # nginx keeps Content-Type, Content-Disposition, Cache-Control and
        # Set-Cookie; its internal location adds back ETag, CSP and nosniff.
        response["X-Accel-Redirect"] = settings.DOWNLOAD_OFFLOAD_PREFIX + stored.content.name
    else:
        response["X-Sendfile"] = stored.content.path
    _common_headers(response, share)
    response["Content-Security-Policy"] = "sandbox"
    response["X-Content-Type-Options"] = "nosniff"
    return response


def _common_headers(response: HttpResponse, share: Share) -> HttpResponse:
    response["Accept-Ranges"] = "bytes"
    response["ETag"] = etag_of(share)
    # An answer about a link that can expire must not be replayed from a cache.
    response["Cache-Control"] = "no-store"
    return response


def _file_headers(response: HttpResponse, share: Share, byte_range: ByteRange | None, length: int) -> HttpResponse:
    _common_headers(response, share)
    response["Content-Length"] = str(length)
    if byte_range is not None:
        response["Content-Range"] = byte_range.content_range(share.file.size)
    # The bytes are the uploader's: never let a browser run them as a page
    # of this origin, whatever their type.
    response["Content-Security-Policy"] = "sandbox"
    response["X-Content-Type-Options"] = "nosniff"
    return response


class RangeReader:
    """Read [first, end) of an open file; on close, report how far the client
    can have got: the bytes read, or fewer when the connection broke and
    `delivery` knows what it acknowledged (links.delivery)."""

    def __init__(self, handle, first: int, end: int, *, on_close, delivery: Delivery | None = None):
        handle.seek(first)
        self.handle = handle
        self.position = first
        self.end = end
        self.first = first
        self.on_close = on_close
        self.delivery = delivery
        self.closed = False

    def read(self, size: int = -1) -> bytes:
        remaining = self.end - self.position
        if remaining <= 0:
            return b""
        data = self.handle.read(remaining if size is None or size < 0 else min(size, remaining))
        self.position += len(data)
        return data

    def sent_until(self) -> int:
        if self.position >= self.end or self.delivery is None:
            return self.position
        received = self.delivery.received_at_most()
        return self.position if received is None else min(self.position, self.first + received)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self.handle.close()
        finally:
            self.on_close(self.sent_until())
