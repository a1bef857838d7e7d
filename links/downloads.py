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
from django.http import FileResponse, HttpResponse, StreamingHttpResponse

from links.delivery import Delivery
from links.guards import visitor
from links.payloads import FilePayload
from links.preconditions import precondition_status
from links.ranges import ByteRange, Unsatisfiable, requested_range
from links.streams import BLOCK_SIZE, ArchiveStream, RangeReader
from sharing.models import Reservation, Share
from storage import store
from storage.disposition import attachment, inline_disposition

logger = logging.getLogger(__name__)

PLAIN = "text/plain; charset=utf-8"


def serve(request, share: Share, payload, *, inline: bool = False) -> HttpResponse | None:
    """Return the response that sends `payload` (a file of the share or its
    zip, links.payloads) or a 416, or None when the link may not send it
    (ended, unshared, or its budget does not hold the range; re-read the
    share to say which). `inline`: shown in the browser (a preview), still
    sandboxed, instead of saved."""
    verdict = precondition_status(request.headers, payload.etag)
    if verdict is not None:
        # Nothing of the file is sent: nothing is reserved or counted.
        text = "" if verdict == HTTPStatus.NOT_MODIFIED else "The file's ETag does not match If-Match.\n"
        return _common_headers(HttpResponse(text, status=verdict, content_type=PLAIN), payload)
    try:
        byte_range = requested_range(
            request.headers.get("Range"), payload.size, if_range=request.headers.get("If-Range"), etag=payload.etag
        )
    except Unsatisfiable:
        text = f"The range starts past the end of the file ({payload.size} bytes).\n"
        response = HttpResponse(text, status=HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE, content_type=PLAIN)
        response["Content-Range"] = f"bytes */{payload.size}"
        return _common_headers(response, payload)
    first, end = (byte_range.first, byte_range.end) if byte_range else (0, payload.size)
    disposition = inline_disposition(payload.filename) if inline else attachment(payload.filename)

    if request.method == "HEAD":
        payload.check_present()
        response = HttpResponse(status=206 if byte_range else 200, content_type=payload.content_type)
        response["Content-Disposition"] = disposition
        return _file_headers(response, payload, byte_range, end - first)

    reservation = None
    if offloadable(share, payload, inline=inline, byte_range=byte_range):
        outcome = offload(request, share, payload)
        if not isinstance(outcome, Reservation):
            return outcome
        reservation = outcome  # allowed and counted, but sent from here after all

    # An ephemeral file may lose its bytes the moment its link ends: only a
    # handle opened (and a bucket's GET started) before the reservation can
    # still send them.
    if isinstance(payload, FilePayload):
        body = payload.open()
        body.seek(first)
    else:
        payload.check_present()  # a zip opens each file when it gets to it
        body = None
    delivery = Delivery.of(request)  # before any byte of this response is written
    try:
        if reservation is None:
            reservation = share.reserve_bytes(first=first, end=end, visitor=visitor(request), sending=payload.sending)
    except BaseException:
        if body is not None:
            body.close()
        raise
    if reservation is None:
        if body is not None:
            body.close()
        return None

    if reservation.budgeted:
        delivery.hold_to(settings.DOWNLOAD_STALL_TIMEOUT)
    if body is not None:
        reader = RangeReader(body, first, end, on_close=reservation.settle, delivery=delivery)
        response = FileResponse(reader, status=206 if byte_range else 200, content_type=payload.content_type)
        response.block_size = BLOCK_SIZE
    else:
        stream = ArchiveStream(payload.layout, first, end, on_close=reservation.settle, delivery=delivery)
        response = StreamingHttpResponse(stream, status=206 if byte_range else 200, content_type=payload.content_type)
    response["Content-Disposition"] = disposition
    return _file_headers(response, payload, byte_range, end - first)


def offloadable(share: Share, payload, *, inline: bool, byte_range: ByteRange | None) -> bool:
    """Whether DOWNLOAD_OFFLOAD may send this response: a whole file saved
    (not previewed) from a link without a limit, whose bytes outlive it (an
    ephemeral file's may go the moment the link ends); for a presigned
    redirect, also without a password (the URL itself would let anyone in
    until it lapses)."""
    return bool(
        settings.DOWNLOAD_OFFLOAD
        and isinstance(payload, FilePayload)
        and not inline
        and byte_range is None
        and share.max_downloads is None
        and not payload.stored.delete_when_unshared
        and not (settings.DOWNLOAD_OFFLOAD == "presigned" and share.has_password)
    )


def offload(request, share: Share, payload: FilePayload) -> HttpResponse | Reservation | None:
    """Allow a whole-file download of a link without a limit, then hand the
    sending to the front server or the bucket; None when the link may not
    send it, or the Reservation when it is to be streamed after all.

    The checks (expiry, password) and the count are made here, as for a
    streamed download; the front server or bucket only sends bytes. Should
    the link have gained a limit since it was read, the reservation settles
    at once as if the whole file was sent (Django cannot see how far the
    other gets; counting it all is the safe direction).
    """
    stored = payload.stored
    payload.check_present()
    reservation = share.reserve_bytes(first=0, end=stored.size, visitor=visitor(request), sending=payload.sending)
    if reservation is None:
        return None
    if settings.DOWNLOAD_OFFLOAD == "presigned":
        # Bound by the deadline as it stands now this download is counted
        # (a link shortened while the request waited included).
        ends_by = type(share).objects.filter(pk=share.pk).values_list("expires_at", flat=True).first()
        url = store.presigned_download(
            stored.content.storage,
            stored.content.name,
            filename=stored.name,
            content_type=stored.content_type,
            ends_by=ends_by or share.expires_at,
            longest=settings.DOWNLOAD_PRESIGNED_SECONDS,
        )
        if url is None:
            return reservation  # the deadline falls within the signing second: stream
        # The bucket sends it: how far its client gets is not seen here (no receipt).
        reservation.settle(reservation.end, measured=False)
        response = HttpResponse(status=302)
        response["Location"] = url
        response["Cache-Control"] = "no-store"
        response["Referrer-Policy"] = "no-referrer"
        return response
    reservation.settle(reservation.end, measured=False)  # the front server sends it: no receipt
    response = HttpResponse(status=200, content_type=stored.content_type)
    response["Content-Disposition"] = attachment(stored.name)
    if settings.DOWNLOAD_OFFLOAD == "x-accel-redirect":
        # nginx keeps Content-Type, Content-Disposition, Cache-Control and
        # Set-Cookie; its internal location adds back ETag, CSP and nosniff.
        response["X-Accel-Redirect"] = settings.DOWNLOAD_OFFLOAD_PREFIX + stored.content.name
    else:
        response["X-Sendfile"] = stored.content.path
    _common_headers(response, payload)
    response["Content-Security-Policy"] = "sandbox"
    response["X-Content-Type-Options"] = "nosniff"
    return response


def _common_headers(response: HttpResponse, payload) -> HttpResponse:
    response["Accept-Ranges"] = "bytes"
    response["ETag"] = payload.etag
    # An answer about a link that can expire must not be replayed from a cache.
    response["Cache-Control"] = "no-store"
    return response


def _file_headers(response: HttpResponse, payload, byte_range: ByteRange | None, length: int) -> HttpResponse:
    _common_headers(response, payload)
    response["Content-Length"] = str(length)
    if byte_range is not None:
        response["Content-Range"] = byte_range.content_range(payload.size)
    # The bytes are the uploader's: never let a browser run them as a page
    # of this origin, whatever their type.
    response["Content-Security-Policy"] = "sandbox"
    response["X-Content-Type-Options"] = "nosniff"
    return response
