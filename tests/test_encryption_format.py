"""The encrypted links' record format (client/microcloud_cli/ece.py,
sealing.py) against RFC 8188's own example and against http_ece, an
implementation we did not write: each reads what the other wrote."""

import base64
import os

import http_ece
import pytest
from microcloud_cli import ece
from microcloud_cli.errors import Failure
from microcloud_cli.sealing import (
    CONTENT_INFO,
    EncryptedFile,
    derive,
    file_salt,
    new_secret,
    open_metadata,
    seal_metadata,
)

PER = ece.plaintext_per_record()
SIZES = [1, 100, PER - 1, PER, PER + 1, 2 * PER, 3 * PER + 12345]


def b64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def test_rfc_8188_example_3_1():
    """Section 3.1: "I am the walrus", one record of rs 4096."""
    key, salt = b64("yqdlZ-tYemfogSmv7Ws5PQ"), b64("I1BsxtFttlv3u_Oo94xnmw")
    expected = b64("I1BsxtFttlv3u_Oo94xnmwAAEAAA-NAVub2qFgBEuQKRapoZu-IxkIva3MEB1PD-ly8Thjg")
    assert ece.encrypt(key, b"I am the walrus", salt=salt, rs=4096) == expected
    assert ece.decrypt(key, expected) == b"I am the walrus"


@pytest.mark.parametrize("size", SIZES)
def test_http_ece_reads_ours_and_we_read_theirs(size):
    key, data = os.urandom(16), os.urandom(size)
    ours = ece.encrypt(key, data, salt=os.urandom(16))
    assert len(ours) == ece.encrypted_size(size)
    assert http_ece.decrypt(ours, key=key, version="aes128gcm") == data
    theirs = http_ece.encrypt(data, key=key, salt=os.urandom(16), version="aes128gcm", rs=ece.RECORD_BYTES)
    assert ece.decrypt(key, theirs) == data


@pytest.mark.parametrize("size", [1, PER, 2 * PER + 7])
def test_a_file_body_computed_at_any_offset_is_one_body_http_ece_reads(tmp_path, size):
    path = tmp_path / "plain"
    data = os.urandom(size)
    path.write_bytes(data)
    secret = new_secret()
    body = EncryptedFile(path, secret, position=2)
    whole = body.read_at(0, body.size)
    assert len(whole) == body.size == ece.encrypted_size(size)
    assert whole == ece.encrypt(derive(secret, CONTENT_INFO), data, salt=file_salt(secret, 2))
    assert http_ece.decrypt(whole, key=derive(secret, CONTENT_INFO), version="aes128gcm") == data
    # What a resumed upload sends from the server's offset, wherever it falls.
    for offset in {0, 5, 20, 21, 22, ece.RECORD_BYTES, ece.RECORD_BYTES + 21, body.size - 1}:
        if offset < body.size:
            assert body.read_at(offset, 70000) == whole[offset : offset + 70000], offset


def test_each_file_of_a_link_has_its_own_salt_and_the_same_file_the_same_body(tmp_path):
    path = tmp_path / "plain"
    path.write_bytes(b"x" * 1000)
    secret = new_secret()
    first, second = EncryptedFile(path, secret, 1), EncryptedFile(path, secret, 2)
    assert first.read_at(0, 100) != second.read_at(0, 100)
    assert first.read_at(0, first.size) == EncryptedFile(path, secret, 1).read_at(0, first.size)  # a resume
    assert EncryptedFile(path, new_secret(), 1).read_at(0, 16) != first.read_at(0, 16)


def test_an_altered_byte_a_cut_body_and_the_wrong_key_are_refused():
    key, data = os.urandom(16), os.urandom(2 * PER + 5)
    body = bytearray(ece.encrypt(key, data, salt=os.urandom(16)))
    body[ece.RECORD_BYTES + 100] ^= 1
    with pytest.raises(ece.Damaged, match="record 1"):
        ece.decrypt(key, bytes(body))
    whole = ece.encrypt(key, data, salt=os.urandom(16))
    with pytest.raises(ece.Damaged, match="cut short"):
        ece.decrypt(key, whole[: ece.record_offset(2)])  # two whole records, the last one missing
    with pytest.raises(ece.Damaged):
        ece.decrypt(os.urandom(16), whole)


def test_the_metadata_opens_with_its_secret_only():
    secret = new_secret()
    files = [{"name": "Q3 numbers.pdf", "type": "application/pdf", "size": 1234}]
    blob = b64(seal_metadata(secret, files, "For the board"))
    assert b"Q3 numbers" not in blob
    assert open_metadata(secret, blob) == {"format": 1, "files": files, "message": "For the board"}
    # The metadata's key is not the content key.
    assert derive(secret, CONTENT_INFO) != derive(secret, b"microcloud e2e metadata key")
    with pytest.raises(Failure, match="does not open it"):
        open_metadata(new_secret(), blob)
