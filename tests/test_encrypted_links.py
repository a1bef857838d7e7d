"""End-to-end encrypted links on the server: the sealed metadata is taken
with the share (or nothing is), handed out at /s/<token>/sealed under the
link's own rules, and never readable there; the files are ordinary bytes."""

import base64
import os
import struct
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.test import Client
from django.utils import timezone
from microcloud_cli import ece
from microcloud_cli.sealing import CONTENT_INFO, derive, file_salt, new_secret, open_metadata, seal_metadata

from sharing.models import MAX_SEALED_METADATA_BYTES, SealedMetadata, Share, check_sealed_metadata
from sharing.models.sealed import LEAST_BYTES

FILES = [{"name": "minutes.txt", "type": "text/plain", "size": 13}]


def sealed(secret=None) -> str:
    return seal_metadata(secret or new_secret(), FILES, "")


def create(client, stored, **fields):
    return client.post("/api/shares/", {"file": stored.pk, "expires_in": 3600, **fields}, format="json")


def encrypted_share(client, make_file, owner, plaintext: bytes, **fields) -> tuple[Share, bytes, bytes]:
    """A one-file encrypted link made through the API as the command-line
    client makes it (its body under a neutral name, its name sealed); return
    the share, its secret and the body the server stores."""
    secret = new_secret()
    body = ece.encrypt(derive(secret, CONTENT_INFO), plaintext, salt=file_salt(secret, 1))
    stored = make_file(owner, name="encrypted-1", data=body, content_type="application/octet-stream")
    files = [{"name": "minutes.txt", "type": "text/plain", "size": len(plaintext)}]
    response = create(client, stored, sealed_metadata=seal_metadata(secret, files), **fields)
    assert response.status_code == 201, response.content
    return Share.objects.get(token=response.json()["token"]), secret, body


def opened(secret: bytes, body: bytes) -> bytes:
    """A downloaded body decrypted with the link's secret."""
    return ece.decrypt(derive(secret, CONTENT_INFO), body)


@pytest.fixture
def ciphertext_file(alice, make_file):
    return make_file(alice, name="encrypted-1", data=os.urandom(200), content_type="application/octet-stream")


def test_a_share_with_sealed_metadata_hands_it_out_and_counts_nothing(alice_client, ciphertext_file):
    secret = new_secret()
    blob = sealed(secret)
    response = create(alice_client, ciphertext_file, sealed_metadata=blob)
    assert response.status_code == 201, response.content
    token = response.json()["token"]
    got = Client().get(f"/s/{token}/sealed")
    assert got.status_code == 200
    assert got["Content-Type"] == "application/octet-stream"
    assert got["Cache-Control"] == "no-store"
    assert open_metadata(secret, got.content)["files"] == FILES
    assert Share.objects.get(token=token).download_count == 0
    # Padding is optional in URL-safe base64.
    assert create(alice_client, ciphertext_file, sealed_metadata=blob + "=" * (-len(blob) % 4)).status_code == 201


@pytest.mark.parametrize(
    ("blob", "said"),
    [
        ("not base64 at all!", "Not URL-safe base64"),
        ("aGVsbG8+Lw", "Not URL-safe base64"),
        (base64.urlsafe_b64encode(b'{"files": []}').decode(), "at least 38 bytes"),
        (base64.urlsafe_b64encode(b"\0" * 16 + b"\0\0\0\x05\0" + b"x" * 40).decode(), "aes128gcm header"),
        (base64.urlsafe_b64encode(b"s" * 16 + b"\0\1\0\0\3abc" + b"x" * 40).decode(), "without a key id"),
        ("A" * 400_000, "Ensure this field has no more than"),
    ],
)
def test_what_cannot_be_sealed_metadata_is_a_400_naming_it(alice_client, ciphertext_file, blob, said):
    response = create(alice_client, ciphertext_file, sealed_metadata=blob)
    assert response.status_code == 400
    assert said in " ".join(response.json()["sealed_metadata"])
    assert not Share.objects.exists()


def test_an_encrypted_links_note_must_be_sealed_too(alice_client, ciphertext_file):
    response = create(alice_client, ciphertext_file, sealed_metadata=sealed(), message="the plain note")
    assert response.status_code == 400
    assert "inside its sealed metadata" in response.json()["message"][0]
    assert not Share.objects.exists()


def test_the_database_refuses_metadata_that_is_not_a_body(alice_client, ciphertext_file):
    share = Share.objects.get(token=create(alice_client, ciphertext_file).json()["token"])
    with pytest.raises(IntegrityError), transaction.atomic():
        SealedMetadata.objects.create(share=share, blob=b"short")


def test_the_sealed_metadata_follows_the_links_rules(alice_client, ciphertext_file):
    locked = create(alice_client, ciphertext_file, sealed_metadata=sealed(), password="blue kite").json()["token"]
    assert Client().get(f"/s/{locked}/sealed").status_code == 403
    assert Client().get(f"/s/{locked}/sealed", headers={"X-Share-Password": "nope"}).status_code == 403
    assert Client().get(f"/s/{locked}/sealed", headers={"X-Share-Password": "blue kite"}).status_code == 200

    ended = create(alice_client, ciphertext_file, sealed_metadata=sealed()).json()["token"]
    # Past its deadline, whether or not the daemon has ended it yet.
    Share.objects.filter(token=ended).update(expires_at=timezone.now() - timedelta(milliseconds=1))
    response = Client().get(f"/s/{ended}/sealed")
    assert (response.status_code, response.content) == (410, b"This link has expired.\n")

    unshared = create(alice_client, ciphertext_file, sealed_metadata=sealed()).json()
    alice_client.delete(f"/api/shares/{unshared['id']}/")
    assert Client().get(f"/s/{unshared['token']}/sealed").status_code == 410

    plain = create(alice_client, ciphertext_file).json()["token"]
    response = Client().get(f"/s/{plain}/sealed")
    assert response.status_code == 404
    assert b"not end-to-end encrypted" in response.content
    assert Client().get("/s/nosuchlink/sealed").status_code == 404


def test_its_page_says_it_is_encrypted_and_offers_no_download(alice_client, ciphertext_file):
    token = create(alice_client, ciphertext_file, sealed_metadata=sealed()).json()["token"]
    page = Client().get(f"/s/{token}", headers={"Accept": "text/html"})
    assert page.status_code == 200
    text = page.content.decode()
    assert "end-to-end encrypted" in text
    assert f"/s/{token}/download" not in text
    plain = create(alice_client, ciphertext_file).json()["token"]
    assert f"/s/{plain}/download" in Client().get(f"/s/{plain}", headers={"Accept": "text/html"}).content.decode()


def body(size: int, record_size: int = 65536) -> bytes:
    return b"s" * 16 + struct.pack(">IB", record_size, 0) + b"x" * (size - 21)


@pytest.mark.parametrize(
    ("blob", "accepted"),
    [
        (body(LEAST_BYTES), True),
        (body(LEAST_BYTES - 1), False),
        (body(MAX_SEALED_METADATA_BYTES), True),
        (body(MAX_SEALED_METADATA_BYTES + 1), False),
        (body(100, record_size=18), True),  # a tag, a delimiter and one byte: the least record RFC 8188 allows
        (body(100, record_size=17), False),
    ],
)
def test_the_bounds_of_what_can_be_sealed_metadata(blob, accepted):
    if accepted:
        assert check_sealed_metadata(blob) == blob
    else:
        with pytest.raises(ValidationError):
            check_sealed_metadata(blob)
