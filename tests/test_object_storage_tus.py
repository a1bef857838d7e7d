"""Resumable (tus) uploads into a bucket (moto's S3 server): the bytes go
into the bucket as they arrive, in parts, with nothing on the local disk,
so the next chunk may go to any node; a chunk that is not kept is sent
again over the same parts."""

import hashlib

import pytest
from django.core.files.storage import storages

from sharing.models import StoredFile
from storage.bucket_partials import PART_SIZE
from tests import buckets
from tests.test_uploads_support import TUS, checksum, new_upload, patch, upload_id
from uploads.models import Upload, partial_dir

pytestmark = pytest.mark.django_db(transaction=True)

DATA = hashlib.sha256(b"tus").digest() * ((2 * PART_SIZE + 12345) // 32)  # two whole parts and a short one
CHUNK = 5 * 1024 * 1024 + 7  # chunks that straddle the parts' edges


def unfinished(endpoint: str, bucket: str) -> list:
    return buckets.client(endpoint).list_multipart_uploads(Bucket=bucket).get("Uploads", [])


def send(client, path: str, data: bytes, start: int = 0) -> None:
    for offset in range(start, len(data), CHUNK):
        response = patch(client, path, offset, data[offset : offset + CHUNK])
        assert response.status_code == 204, response.content


def test_a_tus_upload_in_chunks_becomes_one_object(bucket_storage, alice_client):
    endpoint, bucket = bucket_storage
    path = new_upload(alice_client, len(DATA), filename="photos.tar")
    send(alice_client, path, DATA[: 2 * CHUNK])
    # Mid-way: every byte in the unfinished upload's parts, no object of its own.
    assert buckets.keys(endpoint, bucket) == []
    assert [upload["Key"].rsplit("/", 1)[1] for upload in unfinished(endpoint, bucket)] == [upload_id(path)]
    assert not partial_dir().exists()  # nothing on the local disk
    send(alice_client, path, DATA, start=2 * CHUNK)

    stored = StoredFile.objects.get()
    assert (stored.name, stored.size) == ("photos.tar", len(DATA))
    assert stored.sha256 == hashlib.sha256(DATA).hexdigest()
    with storages["default"].open(stored.content.name, "rb") as handle:
        assert hashlib.sha256(handle.read()).hexdigest() == stored.sha256
    assert buckets.keys(endpoint, bucket) == [f"media/{stored.content.name}"]  # no tail, no partial object
    assert unfinished(endpoint, bucket) == []
    assert not partial_dir().exists()


def test_a_chunk_that_fails_its_checksum_is_sent_again_over_the_same_parts(bucket_storage, alice_client):
    path = new_upload(alice_client, len(DATA))
    send(alice_client, path, DATA[:CHUNK])
    # The next chunk fills part 1 and starts part 2, with a byte wrong.
    chunk = DATA[CHUNK : 2 * CHUNK]
    bad = chunk[:-1] + bytes([chunk[-1] ^ 1])
    refused = patch(alice_client, path, CHUNK, bad, HTTP_UPLOAD_CHECKSUM=checksum("sha1", chunk))
    assert refused.status_code == 460
    assert Upload.objects.get().offset == CHUNK
    send(alice_client, path, DATA, start=CHUNK)
    stored = StoredFile.objects.get()
    assert stored.sha256 == hashlib.sha256(DATA).hexdigest()


def test_terminating_an_upload_leaves_nothing_in_the_bucket(
    bucket_storage, alice_client, django_capture_on_commit_callbacks
):
    endpoint, bucket = bucket_storage
    path = new_upload(alice_client, len(DATA))
    send(alice_client, path, DATA[: 2 * CHUNK])
    assert unfinished(endpoint, bucket)
    with django_capture_on_commit_callbacks(execute=True):
        assert alice_client.delete(path, **TUS).status_code == 204
    assert buckets.keys(endpoint, bucket) == []
    assert unfinished(endpoint, bucket) == []
