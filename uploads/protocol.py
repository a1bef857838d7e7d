"""The tus 1.0 protocol's headers: reading the client's, writing ours, and
the errors, each a JSON {"detail": ...} answer naming the header at fault.

The API answers in English (README, "In the browser"), so nothing here is
translated; messages borrowed from sharing (check_upload) are its own.
"""

import base64
import binascii
import hashlib
import re

from django.http import UnreadablePostError
from django.utils.http import http_date
from rest_framework import status
from rest_framework.exceptions import APIException

TUS_VERSION = "1.0.0"
# creation-defer-length is left out on purpose: an upload's length is known
# when it is created (the quota and the size limit are checked then).
EXTENSIONS = "creation,creation-with-upload,expiration,termination,checksum"
OFFSET_STREAM = "application/offset+octet-stream"
CHECKSUMS = {"sha1": hashlib.sha1, "sha256": hashlib.sha256, "md5": hashlib.md5}
# A header's worth of metadata; gunicorn refuses a longer header line anyway.
METADATA_MAX = 4096
WHOLE_NUMBER = re.compile(r"[0-9]{1,19}")
METADATA_KEY = re.compile(r"[!-+\--~]+")  # printable ASCII but space and comma
UPLOAD_FILE_HEADER = "Upload-File"
# How much of a refused body is read at once while it is dropped.
DRAIN_SIZE = 256 * 1024


class TusError(APIException):
    """An answer of the protocol's: a status, a message and headers."""

    def __init__(self, code: int, detail: str, headers: dict[str, str] | None = None, reason: str | None = None):
        super().__init__(detail)
        self.status_code = code
        self.headers = headers or {}
        self.reason = reason


def bad_header(header: str, problem: str) -> TusError:
    return TusError(status.HTTP_400_BAD_REQUEST, f"{header}: {problem}")


def require_version(request) -> None:
    sent = request.headers.get("Tus-Resumable")
    if sent != TUS_VERSION:
        said = "no Tus-Resumable header" if sent is None else f"Tus-Resumable {sent[:40]!r}"
        raise TusError(
            status.HTTP_412_PRECONDITION_FAILED,
            f"This server speaks tus {TUS_VERSION} only, and the request had {said}.",
            {"Tus-Version": TUS_VERSION},
        )


def whole_number(request, header: str) -> int | None:
    raw = request.headers.get(header)
    if raw is None:
        return None
    if not WHOLE_NUMBER.fullmatch(raw.strip()):
        raise bad_header(header, f"must be a whole number of bytes, got {raw[:40]!r}.")
    return int(raw)


def content_length(request) -> int | None:
    """The body's declared length; None when the client sent none (a chunked
    body, whose size the server cannot check before reading it)."""
    if "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower():
        return None
    raw = request.META.get("CONTENT_LENGTH") or ""
    if raw == "":
        # No body at all: HTTP's way to say 0 outside a chunked encoding.
        return 0
    if not WHOLE_NUMBER.fullmatch(raw):
        raise bad_header("Content-Length", f"must be a whole number of bytes, got {raw[:40]!r}.")
    return int(raw)


def length_required() -> TusError:
    return TusError(
        status.HTTP_411_LENGTH_REQUIRED,
        "Send the chunk with a Content-Length (a chunked body is not accepted: its size must be checked first).",
    )


def require_offset_stream(request) -> None:
    sent = request.META.get("CONTENT_TYPE", "")
    if sent.split(";")[0].strip().lower() != OFFSET_STREAM:
        raise TusError(
            status.HTTP_415_UNSUPPORTED_MEDIA_TYPE,
            f"Content-Type must be {OFFSET_STREAM}, got {sent[:60]!r}.",
        )


def chunk_too_large(limit: int) -> TusError:
    # Refused unread: the connection cannot carry another request.
    return TusError(
        status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        f"The chunk is larger than the server accepts in one request ({limit} bytes): send smaller chunks.",
        {"Connection": "close"},
    )


def upload_limit(least: int, most: int) -> str:
    """Upload-Limit, a structured dictionary as the IETF's resumable-uploads
    draft (tus's successor) names these limits, for what tus 1.0 has no
    header for: the fewest bytes a chunk that does not end the upload may
    carry, and the most any chunk may (docs/api.md)."""
    return f"min-append-size={least}, max-append-size={most}"


def chunk_too_small(size: int, least: int, most: int) -> TusError:
    return TusError(
        status.HTTP_400_BAD_REQUEST,
        f"The chunk is {size} bytes, but every chunk except the one that ends the upload must carry at least "
        f"{least} bytes here (the bytes go to a bucket, in parts no smaller): nothing was written; "
        f"send it again as a chunk of {least} to {most} bytes, or as the rest of the file.",
        {"Upload-Limit": upload_limit(least, most)},
    )


def drain(stream, size: int) -> None:
    """Read and drop a refused body of `size` bytes, one small enough to
    read (a chunk under the least): the client then gets the answer, where
    a connection closed on an unread body is often reset before it arrives
    (and tus clients retry a reset), and the connection stays usable."""
    while size > 0:
        try:
            piece = stream.read(min(DRAIN_SIZE, size))
        except (UnreadablePostError, OSError):
            return  # the client went away
        if not piece:
            return
        size -= len(piece)


def past_the_end(offset: int, size: int, length: int) -> TusError:
    return TusError(
        status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        f"{size} bytes at offset {offset} would go past the upload's Upload-Length of {length} bytes.",
    )


def parse_metadata(raw: str | None) -> dict[str, str]:
    """Upload-Metadata as sent: key -> base64 value ("" for a key without
    one), each value checked to be base64. An empty header is no metadata."""
    if raw is None or not raw.strip():
        return {}
    if len(raw) > METADATA_MAX:
        raise bad_header("Upload-Metadata", f"is longer than {METADATA_MAX} characters.")
    pairs = {}
    for item in raw.split(","):
        key, _, value = item.strip().partition(" ")
        value = value.strip()
        if not METADATA_KEY.fullmatch(key):
            raise bad_header("Upload-Metadata", f"{key[:40]!r} is not a key (printable ASCII, no space or comma).")
        if key in pairs:
            raise bad_header("Upload-Metadata", f"the key {key!r} is given twice.")
        try:
            base64.b64decode(value, validate=True)
        except binascii.Error:
            raise bad_header("Upload-Metadata", f"the value of {key!r} is not base64.") from None
        pairs[key] = value
    return pairs


def metadata_text(pairs: dict[str, str], key: str) -> str | None:
    if key not in pairs:
        return None
    try:
        return base64.b64decode(pairs[key]).decode("utf-8")
    except UnicodeDecodeError:
        raise bad_header("Upload-Metadata", f"the value of {key!r} is not UTF-8 text.") from None


def metadata_header(pairs: dict[str, str]) -> str:
    # Sorted: PostgreSQL's jsonb keeps no order, and the order means nothing.
    return ",".join(f"{key} {value}" if value else key for key, value in sorted(pairs.items()))


def parse_checksum(raw: str | None):
    """Upload-Checksum as (algorithm, a new hash object, the expected digest),
    or None without the header."""
    if raw is None:
        return None
    algorithm, _, encoded = raw.strip().partition(" ")
    make = CHECKSUMS.get(algorithm.lower())
    if make is None:
        raise bad_header(
            "Upload-Checksum",
            f"the algorithm {algorithm[:20]!r} is not supported; use one of {', '.join(CHECKSUMS)}.",
        )
    hasher = make()
    try:
        expected = base64.b64decode(encoded.strip(), validate=True)
    except binascii.Error:
        expected = b""
    if len(expected) != hasher.digest_size:
        raise bad_header("Upload-Checksum", f"the digest is not a base64 {algorithm.lower()} digest.")
    return algorithm.lower(), hasher, expected


def checksum_mismatch(algorithm: str) -> TusError:
    return TusError(
        460,
        f"The chunk's {algorithm} does not match Upload-Checksum: its bytes were discarded; send it again.",
        reason="Checksum Mismatch",
    )


def expires_header(moment) -> str:
    """RFC 9110's date format (IMF-fixdate), as Upload-Expires wants it."""
    return http_date(moment.timestamp())
