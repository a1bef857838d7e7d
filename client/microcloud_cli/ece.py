"""RFC 8188 "aes128gcm" Encrypted Content-Encoding, record by record.

A body is a 21-byte header (salt 16, record size 4, key id length 1: no key
id here) and records of `rs` bytes but the last: each is AES-128-GCM over
the record's plaintext and one delimiter byte (1, or 2 for the last record),
with its 16-byte tag. The content key and the nonce come from HKDF-SHA-256
over the input key with the salt; record i's nonce is the nonce XOR i.
Records of a fixed size put plaintext byte p in record p // (rs - 17), so a
range of the file is a range of records: a download resumes at a record.
"""

import hashlib
import hmac
import struct
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

HEADER_BYTES = 21
TAG_BYTES = 16
RECORD_BYTES = 65536  # rs: each record's ciphertext, tag and delimiter included
SALT_BYTES = 16


class Damaged(Exception):
    """A record that does not decrypt: the wrong key, or altered bytes."""


def hkdf(key: bytes, *, salt: bytes, info: bytes, length: int) -> bytes:
    """HKDF-SHA-256 (RFC 5869) with one block of output, all RFC 8188 needs."""
    prk = hmac.new(salt, key, hashlib.sha256).digest()
    return hmac.new(prk, info + b"\x01", hashlib.sha256).digest()[:length]


def plaintext_per_record(rs: int = RECORD_BYTES) -> int:
    return rs - TAG_BYTES - 1


def records_for(size: int, rs: int = RECORD_BYTES) -> int:
    """Records of a `size`-byte plaintext: at least one (the last carries the
    final delimiter, full or not)."""
    per = plaintext_per_record(rs)
    return max(1, -(-size // per))


def encrypted_size(size: int, rs: int = RECORD_BYTES) -> int:
    return HEADER_BYTES + size + records_for(size, rs) * (TAG_BYTES + 1)


def record_offset(index: int, rs: int = RECORD_BYTES) -> int:
    """Where record `index` starts in the body."""
    return HEADER_BYTES + index * rs


@dataclass(frozen=True)
class Header:
    salt: bytes
    rs: int

    def pack(self) -> bytes:
        return self.salt + struct.pack(">IB", self.rs, 0)

    @classmethod
    def parse(cls, data: bytes) -> "Header":
        if len(data) < HEADER_BYTES:
            raise Damaged("too short to be encrypted content")
        rs, idlen = struct.unpack(">IB", data[16:HEADER_BYTES])
        if rs < TAG_BYTES + 2 or idlen != 0:
            raise Damaged("not content encrypted by this format (its header)")
        return cls(salt=data[:16], rs=rs)


class Cipher:
    """The content key and nonce of one body (one input key, one salt)."""

    def __init__(self, key: bytes, header: Header):
        self.header = header
        self.aead = AESGCM(hkdf(key, salt=header.salt, info=b"Content-Encoding: aes128gcm\x00", length=16))
        self.nonce = int.from_bytes(hkdf(key, salt=header.salt, info=b"Content-Encoding: nonce\x00", length=12))

    def _nonce(self, index: int) -> bytes:
        return (self.nonce ^ index).to_bytes(12)

    def seal(self, index: int, plaintext: bytes, *, last: bool) -> bytes:
        return self.aead.encrypt(self._nonce(index), plaintext + (b"\x02" if last else b"\x01"), None)

    def open(self, index: int, record: bytes) -> tuple[bytes, bool]:
        """The record's plaintext, and whether it says it is the last."""
        try:
            padded = self.aead.decrypt(self._nonce(index), record, None)
        except InvalidTag:
            raise Damaged(f"record {index} does not decrypt: the wrong key, or altered bytes") from None
        body = padded.rstrip(b"\x00")
        if not body or body[-1] not in (1, 2):
            raise Damaged(f"record {index} has no delimiter")
        return body[:-1], body[-1] == 2


def encrypt(key: bytes, plaintext: bytes, *, salt: bytes, rs: int = RECORD_BYTES) -> bytes:
    """A whole body at once (small things: the metadata, tests)."""
    header = Header(salt=salt, rs=rs)
    cipher = Cipher(key, header)
    per = plaintext_per_record(rs)
    count = records_for(len(plaintext), rs)
    parts = [header.pack()]
    for index in range(count):
        parts.append(cipher.seal(index, plaintext[index * per : (index + 1) * per], last=index == count - 1))
    return b"".join(parts)


def decrypt(key: bytes, body: bytes) -> bytes:
    header = Header.parse(body)
    cipher = Cipher(key, header)
    out = []
    records = body[HEADER_BYTES:]
    for index, start in enumerate(range(0, max(len(records), 1), header.rs)):
        plaintext, last = cipher.open(index, records[start : start + header.rs])
        out.append(plaintext)
        if last:
            if start + header.rs < len(records):
                raise Damaged("bytes after the last record")
            return b"".join(out)
    raise Damaged("the last record is missing: the content was cut short")
