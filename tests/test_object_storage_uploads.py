"""Uploads into a bucket (moto's S3 server): a multipart upload's bytes go
into the bucket as they arrive, in parts, never to the local disk; an upload
the request refuses leaves nothing behind."""

import hashlib
import socket

import pytest
from django.core.files.storage import storages
from django.core.files.uploadedfile import SimpleUploadedFile

from sharing.models import SharingPolicy, StoredFile
from storage.buckets import PART_SIZE
from tests import buckets
from tests.helpers import free_port, start_web, stop, storage_env, wait_for_port, wait_until
from tokens.service import issue

pytestmark = pytest.mark.django_db(transaction=True)

BIG = hashlib.sha256(b"big").digest() * ((PART_SIZE * 2 + 12345) // 32)  # three parts, the last one short


@pytest.fixture
def no_local_temporary_files(settings, tmp_path):
    """A temporary directory that does not exist: an upload written to the
    local disk would fail."""
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path / "nowhere")


def unfinished(endpoint: str, bucket: str) -> list:
    return buckets.client(endpoint).list_multipart_uploads(Bucket=bucket).get("Uploads", [])


def test_a_big_upload_streams_into_the_bucket_in_parts(bucket_storage, no_local_temporary_files, alice_client):
    endpoint, bucket = bucket_storage
    response = alice_client.post("/api/files/", {"file": SimpleUploadedFile("big.bin", BIG)}, format="multipart")
    assert response.status_code == 201, response.content
    stored = StoredFile.objects.get(pk=response.json()["id"])
    assert (stored.size, stored.sha256) == (len(BIG), hashlib.sha256(BIG).hexdigest())
    assert buckets.keys(endpoint, bucket) == [f"media/{stored.content.name}"]
    head = buckets.client(endpoint).head_object(Bucket=bucket, Key=f"media/{stored.content.name}")
    assert head["ContentLength"] == len(BIG)
    assert head["ETag"].strip('"').endswith("-3")  # a multipart object of 3 parts
    with storages["default"].open(stored.content.name, "rb") as handle:
        assert hashlib.sha256(handle.read()).hexdigest() == stored.sha256
    assert unfinished(endpoint, bucket) == []


def test_an_upload_over_the_quota_leaves_nothing_in_the_bucket(bucket_storage, no_local_temporary_files, alice_client):
    endpoint, bucket = bucket_storage
    SharingPolicy.objects.update_or_create(pk=SharingPolicy.SINGLETON_ID, defaults={"default_quota_bytes": PART_SIZE})
    response = alice_client.post("/api/files/", {"file": SimpleUploadedFile("big.bin", BIG)}, format="multipart")
    assert response.status_code == 413, response.content
    assert not StoredFile.objects.exists()
    assert buckets.keys(endpoint, bucket) == []
    assert unfinished(endpoint, bucket) == []


def test_an_upload_the_request_refuses_is_deleted(bucket_storage, no_local_temporary_files, alice_client):
    endpoint, bucket = bucket_storage
    body = {"file": SimpleUploadedFile("big.bin", BIG), "delete_when_unshared": "perhaps"}
    response = alice_client.post("/api/files/", body, format="multipart")
    assert response.status_code == 400
    assert buckets.keys(endpoint, bucket) == []


def test_on_the_disk_an_upload_still_goes_through_a_temporary_file(no_local_temporary_files, alice_client):
    """The same settings without a bucket: the bytes take the disk's path
    (which the missing temporary directory breaks, so this test can tell)."""
    with pytest.raises(FileNotFoundError):
        alice_client.post("/api/files/", {"file": SimpleUploadedFile("big.bin", BIG)}, format="multipart")


@pytest.mark.fault
@pytest.mark.timeout(60)
def test_an_upload_cut_midway_leaves_no_unfinished_upload(bucket_storage, alice, tmp_path, media_root):
    """A client that sends half a multipart body and hangs up: the bucket's
    multipart upload is aborted (nothing stored, nothing billed)."""
    endpoint, bucket = bucket_storage
    token = issue(alice, name="test")[1]
    port = free_port()
    server = start_web(port, tmp_path / "web.log", workers=1, threads=2, **storage_env(media_root))
    try:
        wait_for_port(port, 30, server)
        boundary = "cut-here"
        preamble = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        head = (
            "POST /api/files/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Token {token}\r\nContent-Type: multipart/form-data; boundary={boundary}\r\n"
            f"Content-Length: {len(preamble) + len(BIG) + 100}\r\n\r\n"
        ).encode()
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(head + preamble + BIG[: PART_SIZE + PART_SIZE // 2])  # a part sent, then half of one
            assert wait_until(lambda: unfinished(endpoint, bucket), 10), "the upload never reached the bucket"
        assert wait_until(lambda: not unfinished(endpoint, bucket), 10), unfinished(endpoint, bucket)
    finally:
        stop(server)
    assert buckets.keys(endpoint, bucket) == []
    assert not StoredFile.objects.exists()
