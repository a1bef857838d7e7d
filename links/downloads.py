"""Send a share's bytes: decide whether the request counts, then stream.

Counting rule (one conditional UPDATE decides, see Share.start_download):
- a request that starts a download (no Range, or a range from byte 0) counts;
- a request that resumes (a range starting later) is free only when it
  carries the resume ticket of a download it continues and
  Share.resume_download accepts it; otherwise it counts like a new download,
  so no mix of ranges gets more out of a limited link than its count allows;
- HEAD counts nothing.
With DOWNLOAD_OFFLOAD, a whole-file GET (no Range) is counted the same way,
then sent by the front server (X-Accel-Redirect / X-Sendfile); ranged
requests are always streamed here, so the bytes sent are the bytes counted.
Whatever was sent, the rest of the download's reservation is released when
the response closes (the client broke off), so a resume can take it.
"""

import logging
from functools import partial

from django.conf import settings
from django.db import DatabaseError
from django.http import FileResponse, HttpResponse
from django.utils.http import content_disposition_header

from links.guards import visitor
from links.ranges import ByteRange, Unsatisfiable, requested_range
from links.tickets import give_resume_ticket, resume_ticket
from sharing.models import Download, Share

logger = logging.getLogger(__name__)

# Read and write in 256 KiB pieces: 4 KiB (FileResponse's default) costs a
# Python round trip per page of a 100 MB file.
BLOCK_SIZE = 256 * 1024


class FileMissing(Exception):
    """The share's file has no bytes in storage."""


def etag_of(share: Share) -> str:
    return f'"{share.file.sha256}"'  # strong: the sha256 of the exact bytes


def resumes(request, share: Share) -> bool:
    """Whether the request asks to continue a download past its first byte
    with a ticket (the only way a link ended by its limit may still serve).
    Never once the file is gone (an ephemeral file reaped at the last download)."""
    if share.file_id is None:
        return False
    byte_range = wanted_range(request, share)
    return byte_range is not None and byte_range.first > 0 and resume_ticket(request, share) is not None


def wanted_range(request, share: Share) -> ByteRange | None:
    try:
        return requested_range(
            request.headers.get("Range"),
            share.file.size,
            if_range=request.headers.get("If-Range"),
            etag=etag_of(share),
        )
    except Unsatisfiable:
        return None


def serve(request, share: Share) -> HttpResponse | None:
    """Return the response that sends the file (or a 416), or None when the
    link may not serve it after all (ended, used up, unshared meanwhile)."""
    stored = share.file
    try:
        byte_range = requested_range(
            request.headers.get("Range"), stored.size, if_range=request.headers.get("If-Range"), etag=etag_of(share)
        )
    except Unsatisfiable:
        response = HttpResponse(status=416)
        response["Content-Range"] = f"bytes */{stored.size}"
        return _common_headers(response, share)
    first, end = (byte_range.first, byte_range.end) if byte_range else (0, stored.size)

    if request.method == "HEAD":
        if not stored.content.storage.exists(stored.content.name):
            raise FileMissing
        response = HttpResponse(status=206 if byte_range else 200, content_type=stored.content_type)
        response["Content-Disposition"] = content_disposition_header(True, stored.name)
        return _file_headers(response, share, byte_range, end - first)

    # An ephemeral file may lose its bytes the moment its last download is
    # counted: only a handle opened before the count can still send them.
    if settings.DOWNLOAD_OFFLOAD and "Range" not in request.headers and not stored.delete_when_unshared:
        return offload(request, share)

    try:
        handle = stored.content.storage.open(stored.content.name, "rb")
    except OSError:
        raise FileMissing from None
    try:
        download_id = None
        ticket = resume_ticket(request, share) if first > 0 else None
        who = visitor(request)
        if ticket is not None and share.resume_download(ticket, first_byte=first, end=end, visitor=who):
            download_id, counted = ticket, False
        else:
            download = share.start_download(first_byte=first, end=end, visitor=who)
            if download is None:
                handle.close()
                return None
            download_id, counted = download.pk, True
    except BaseException:
        handle.close()
        raise

    body = RangeReader(handle, first, end, on_close=partial(_release, download_id, first, end))
    response = FileResponse(
        body,
        status=206 if byte_range else 200,
        as_attachment=True,
        filename=stored.name,
        content_type=stored.content_type,
    )
    response.block_size = BLOCK_SIZE
    _file_headers(response, share, byte_range, end - first)
    if counted:
        give_resume_ticket(response, share, download_id)
    return response


def offload(request, share: Share) -> HttpResponse | None:
    """Count a whole-file download, then hand the sending to the front server.

    The checks (expiry, limit, password) and the count are made here, as for
    a streamed download; the front server only sends bytes. Its reservation
    stays the whole file (Django cannot see how far the front server got), so
    a broken offloaded download resumes as a new count unless it broke within
    resume_slack of its end.
    """
    stored = share.file
    if not stored.content.storage.exists(stored.content.name):
        raise FileMissing
    download = share.start_download(first_byte=0, end=stored.size, visitor=visitor(request))
    if download is None:
        return None
    response = HttpResponse(status=200, content_type=stored.content_type)
    response["Content-Disposition"] = content_disposition_header(True, stored.name)
    if settings.DOWNLOAD_OFFLOAD == "x-accel-redirect":
        # nginx keeps Content-Type, Content-Disposition, Cache-Control and
        # Set-Cookie; its internal location adds back ETag, CSP and nosniff.
        response["X-Accel-Redirect"] = settings.DOWNLOAD_OFFLOAD_PREFIX + stored.content.name
    else:
        response["X-Sendfile"] = stored.content.path
    _common_headers(response, share)
    response["Content-Security-Policy"] = "sandbox"
    response["X-Content-Type-Options"] = "nosniff"
    give_resume_ticket(response, share, download.pk)
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


def _release(download_id: int, first: int, end: int, sent_until: int) -> None:
    if sent_until >= end:
        return  # all sent: nothing to give back
    try:
        Download(pk=download_id).release(first_byte=first, end=end, sent_until=sent_until)
    except DatabaseError:
        # The reservation simply stays: a resume then counts as a new download.
        logger.warning("could not release download %s", download_id, exc_info=True)


class RangeReader:
    """Read [first, end) of an open file; on close, report how far it got."""

    def __init__(self, handle, first: int, end: int, *, on_close):
        handle.seek(first)
        self.handle = handle
        self.position = first
        self.end = end
        self.on_close = on_close
        self.closed = False

    def read(self, size: int = -1) -> bytes:
        remaining = self.end - self.position
        if remaining <= 0:
            return b""
        data = self.handle.read(remaining if size is None or size < 0 else min(size, remaining))
        self.position += len(data)
        return data

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self.handle.close()
        finally:
            self.on_close(self.position)
