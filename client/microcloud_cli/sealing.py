"""An encrypted link's keys, its sealed metadata and its files' bytes
(docs/encryption.md): one random 128-bit secret per link, carried only in
the link's #fragment; HKDF gives it a content key and a separate metadata
key; each file is an RFC 8188 body (microcloud_cli.ece)."""

import base64
import hashlib
import hmac
import json
import secrets
from pathlib import Path

from microcloud_cli import ece
from microcloud_cli.errors import Failure

SECRET_BYTES = 16
CONTENT_INFO = b"microcloud e2e content key"
METADATA_INFO = b"microcloud e2e metadata key"
SALT_INFO = b"microcloud e2e file salt "
FORMAT = 1


def new_secret() -> bytes:
    return secrets.token_bytes(SECRET_BYTES)


def secret_text(secret: bytes) -> str:
    return base64.urlsafe_b64encode(secret).rstrip(b"=").decode()


def secret_from_text(text: str) -> bytes:
    try:
        secret = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError:
        secret = b""
    if len(secret) != SECRET_BYTES:
        raise Failure("the link's #secret is not one of this format's (22 URL-safe base64 characters)")
    return secret


def derive(secret: bytes, info: bytes) -> bytes:
    return ece.hkdf(secret, salt=b"", info=info, length=16)


def file_salt(secret: bytes, position: int) -> bytes:
    """Each file's salt, derived rather than drawn: an upload resumed in
    another run must send the very bytes the first run began (and a
    link's secret is never used for another link)."""
    return hmac.new(secret, SALT_INFO + str(position).encode(), hashlib.sha256).digest()[: ece.SALT_BYTES]


def seal_metadata(secret: bytes, files: list[dict], message: str = "") -> str:
    """The names, types, sizes and the note, as one sealed blob (base64url)."""
    document = json.dumps({"format": FORMAT, "files": files, "message": message}).encode()
    body = ece.encrypt(derive(secret, METADATA_INFO), document, salt=secrets.token_bytes(ece.SALT_BYTES))
    return base64.urlsafe_b64encode(body).rstrip(b"=").decode()


def open_metadata(secret: bytes, blob: bytes) -> dict:
    try:
        document = json.loads(ece.decrypt(derive(secret, METADATA_INFO), blob))
    except ece.Damaged:
        raise Failure("the link's #secret does not open it: check that the whole link was copied") from None
    if document.get("format") != FORMAT:
        raise Failure("this link was encrypted in a format this version does not know; update microcloud")
    return document


class EncryptedFile:
    """A file's RFC 8188 body, computed on demand at any offset: what an
    upload resumed from the server's offset sends."""

    def __init__(self, path: Path, secret: bytes, position: int):
        self.path = path
        self.plain_size = path.stat().st_size
        self.size = ece.encrypted_size(self.plain_size)
        self.header = ece.Header(salt=file_salt(secret, position), rs=ece.RECORD_BYTES)
        self.cipher = ece.Cipher(derive(secret, CONTENT_INFO), self.header)
        self.records = ece.records_for(self.plain_size)

    def read_at(self, offset: int, count: int) -> bytes:
        """`count` bytes of the body from `offset` (fewer at its end)."""
        end = min(self.size, offset + count)
        out = bytearray()
        if offset < ece.HEADER_BYTES:
            out += self.header.pack()[offset:end]
        per = ece.plaintext_per_record()
        first = max(0, (offset - ece.HEADER_BYTES) // ece.RECORD_BYTES)
        with self.path.open("rb") as source:
            index = first
            while index < self.records and ece.record_offset(index) < end:
                source.seek(index * per)
                record = self.cipher.seal(index, source.read(per), last=index == self.records - 1)
                start = ece.record_offset(index)
                out += record[max(0, offset - start) : end - start]
                index += 1
        return bytes(out)
