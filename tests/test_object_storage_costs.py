"""What a request costs the bucket (moto's S3 server over HTTP, every request
counted in the storage's own client): a tus chunk costs its own bytes and a
bounded number of requests, never the bytes sent before it; a chunk too
small to be a part is refused unwritten, naming the least; a zip of many files
costs one GET per member it sends, and a HEAD of it none."""

import hashlib
import io
import random
import zipfile
import zlib
from datetime import timedelta

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import storages
from django.test import Client
from django.utils import timezone
from tusclient import client as tus
from tusclient.exceptions import TusUploadFailed

from sharing.models import Share, StoredFile
from tests import buckets
from tests.helpers import free_port, report, run_manage, start_web, stop, storage_env, wait_for_port
from tests.test_uploads_support import TUS, checksum, create, new_upload, patch
from tokens.service import issue
from uploads.models import Upload
from uploads.writing import claim, commit, receive

pytestmark = pytest.mark.django_db(transaction=True)

KiB, MiB = 1024, 1024 * 1024
SMALLEST_PART = 5 * MiB  # S3's, but the last
LIMIT = f"min-append-size={SMALLEST_PART}, max-append-size={64 * MiB}"


def data_of(size: int) -> bytes:
    return random.Random(size).randbytes(size)


def unfinished(endpoint: str, bucket: str) -> list:
    return buckets.client(endpoint).list_multipart_uploads(Bucket=bucket).get("Uploads", [])


def traffic(calls: buckets.BucketCalls) -> str:
    return f"{(calls.sent + calls.received) / MiB:.1f} MiB"


# --- tus chunks ---------------------------------------------------------------------


@pytest.mark.parametrize(("length", "chunk"), [(1 * MiB, 4 * KiB), (4 * MiB, 64 * KiB)])
def test_a_chunk_smaller_than_a_part_is_refused_unwritten_naming_the_least(
    bucket_storage, alice_client, capsys, length, chunk
):
    data = data_of(length)
    path = new_upload(alice_client, length, filename="notes.bin")
    taken = 0
    with buckets.counted(storages["default"]) as calls:
        for offset in range(0, length, chunk):
            answer = patch(alice_client, path, offset, data[offset : offset + chunk])
            if answer.status_code != 204:
                break
            taken += 1
    report(
        capsys,
        f"{length // KiB} KiB in {chunk // KiB} KiB chunks into a bucket",
        chunks_taken=taken,
        bucket_requests=len(calls),
        traffic=traffic(calls),
    )

    assert (answer.status_code, taken) == (400, 0)
    assert answer.json() == {
        "detail": f"The chunk is {chunk} bytes, but every chunk except the one that ends the upload must carry "
        f"at least {SMALLEST_PART} bytes here (the bytes go to a bucket, in parts no smaller): nothing was "
        f"written; send it again as a chunk of {SMALLEST_PART} to {64 * MiB} bytes, or as the rest of the file."
    }
    assert "Connection" not in answer  # read and dropped: the connection goes on
    assert answer["Upload-Limit"] == LIMIT
    assert len(calls) == 0  # nothing asked of the bucket
    assert Upload.objects.get().offset == 0
    # The client sends it again, bigger: here the rest of the file at once.
    whole = patch(alice_client, path, 0, data)
    assert whole.status_code == 204
    assert StoredFile.objects.get().sha256 == hashlib.sha256(data).hexdigest()


def test_the_least_chunk_is_told_before_any_is_sent_and_a_first_one_too_small_creates_nothing(
    bucket_storage, alice_client
):
    endpoint, bucket = bucket_storage
    assert alice_client.options("/api/uploads/")["Upload-Limit"] == LIMIT

    refused = create(alice_client, 8 * MiB, body=b"x" * (64 * KiB))
    assert refused.status_code == 400
    assert refused.json()["detail"].startswith(f"The chunk is {64 * KiB} bytes, but every chunk except")
    assert Upload.objects.count() == 0
    assert unfinished(endpoint, bucket) == []

    created = create(alice_client, 8 * MiB)
    assert created["Upload-Limit"] == LIMIT
    assert alice_client.head(created["Location"], **TUS)["Upload-Limit"] == LIMIT


@pytest.mark.parametrize("chunk", [8 * MiB, 5 * MiB + 7])
def test_every_chunk_costs_its_own_bytes_in_a_bounded_number_of_requests(bucket_storage, alice_client, capsys, chunk):
    """8 MiB: the web app's chunk; 5 MiB + 7: chunks that straddle every
    edge of a fixed part grid (where the bytes past the last part used to
    be read back and written again by every chunk)."""
    endpoint, bucket = bucket_storage
    length = 16 * MiB
    data = data_of(length)
    path = new_upload(alice_client, length, filename="video.bin")
    costs = []
    for offset in range(0, length, chunk):
        with buckets.counted(storages["default"]) as calls:
            answer = patch(alice_client, path, offset, data[offset : offset + chunk])
        assert answer.status_code == 204, answer.content
        costs.append(calls)
    *middle, last = costs
    report(
        capsys,
        f"16 MiB in chunks of {chunk} bytes into a bucket",
        requests_per_chunk=[len(calls) for calls in costs],
        traffic_per_chunk=[traffic(calls) for calls in costs],
        last_chunk=",".join(last.operations),
    )

    for calls in middle:
        assert calls.operations == ["ListMultipartUploads", "UploadPart"]
        assert (calls.sent, calls.received) == (chunk, 0)  # its own bytes, none read back
    # The last: its part, the join, the copy under the file's name, one
    # read for the digests, and the partial upload's removal.
    assert len(last) <= 12
    assert last.count("UploadPart") == 1
    assert (last.count("GetObject"), last.received) == (1, length)
    stored = StoredFile.objects.get()
    assert stored.sha256 == hashlib.sha256(data).hexdigest()
    assert buckets.keys(endpoint, bucket) == [f"media/{stored.content.name}"]
    assert unfinished(endpoint, bucket) == []


def test_a_body_cut_short_keeps_its_whole_parts_and_the_rest_follows(bucket_storage, alice, alice_client):
    """A body that stops mid-way (the client went away): the parts it filled
    are kept and the offset says how far; the bytes past them were never
    sent anywhere. (Django's test client cannot send less than its
    Content-Length: the writer is given the short body itself.)"""
    length = 20 * MiB
    data = data_of(length)
    path = new_upload(alice_client, length)
    upload = Upload.objects.get()
    write_claim = claim(upload.pk, alice.pk, 0)
    got = receive(io.BytesIO(data[: 10 * MiB]), write_claim, 0, length, None, length)
    assert (got.written, got.whole) == (8 * MiB, False)  # one whole part of the 10 MiB that came
    assert commit(write_claim, 0, got.written, length)

    assert alice_client.head(path, **TUS)["Upload-Offset"] == str(8 * MiB)
    assert patch(alice_client, path, 8 * MiB, data[8 * MiB :]).status_code == 204
    assert StoredFile.objects.get().sha256 == hashlib.sha256(data).hexdigest()


def test_a_file_sent_again_in_other_chunks_after_a_checksum_mismatch_is_joined_right(bucket_storage, alice_client):
    """The refused chunk's parts stay in the bucket, two of them under
    numbers the chunks sent again then pass over: the file is joined from
    the kept parts only, following the chain from byte 0."""
    length = 30 * MiB
    data = data_of(length)
    path = new_upload(alice_client, length)
    bad = data[:-1] + bytes([data[-1] ^ 1])
    refused = patch(alice_client, path, 0, bad, HTTP_UPLOAD_CHECKSUM=checksum("sha256", data))
    assert refused.status_code == 460  # its parts at 0, 8 and 16 MiB were sent
    with buckets.counted(storages["default"]) as calls:
        assert patch(alice_client, path, 0, data[: 12 * MiB]).status_code == 204
        assert patch(alice_client, path, 12 * MiB, data[12 * MiB :]).status_code == 204
    assert StoredFile.objects.get().sha256 == hashlib.sha256(data).hexdigest()
    assert calls.count("GetObject") == 1  # the finish's one read for the digests: nothing read back


@pytest.fixture
def web_on_the_bucket(bucket_storage, tmp_path):
    """gunicorn, as deployed, with its bytes in this test's bucket."""
    port = free_port()
    server = start_web(port, tmp_path / "web.log", workers=1, threads=2, **storage_env(tmp_path / "node"))
    try:
        wait_for_port(port, 30, server)
        yield port
    finally:
        stop(server)


@pytest.mark.fault
@pytest.mark.timeout(120)
def test_tuspy_is_told_the_least_chunk_and_resumes_with_a_big_enough_one(web_on_the_bucket, alice, tmp_path):
    data = data_of(12 * MiB + 5)
    source = tmp_path / "video.bin"
    source.write_bytes(data)
    key = issue(alice, name="test")[1]
    client = tus.TusClient(
        f"http://127.0.0.1:{web_on_the_bucket}/api/uploads/", headers={"Authorization": f"Token {key}"}
    )
    small = client.uploader(file_path=str(source), chunk_size=64 * KiB, metadata={"filename": "video.bin"})
    with pytest.raises(TusUploadFailed) as refused:
        small.upload()
    assert refused.value.status_code == 400
    assert f"must carry at least {SMALLEST_PART} bytes".encode() in refused.value.response_content
    assert Upload.objects.get().offset == 0

    # The same upload resumed from its URL, in the chunks docs/api.md names.
    client.uploader(file_path=str(source), chunk_size=8 * MiB, url=small.url).upload()
    assert StoredFile.objects.get(owner=alice).sha256 == hashlib.sha256(data).hexdigest()


# --- zips ---------------------------------------------------------------------------


@pytest.fixture
def many(bucket_storage, alice):
    """500 small files in the bucket, shared by one link."""
    storage = storages["default"]
    rows, contents = [], {}
    for n in range(500):
        data = f"file {n}\n".encode() * (n % 7 + 1)
        name = storage.save(f"files/many/{n:03}", ContentFile(data))
        contents[f"{n:03}.txt"] = data
        rows.append(
            StoredFile(
                owner=alice,
                content=name,
                name=f"{n:03}.txt",
                size=len(data),
                content_type="text/plain",
                sha256=hashlib.sha256(data).hexdigest(),
                crc32=zlib.crc32(data),
            )
        )
    files = StoredFile.objects.bulk_create(rows)
    return Share.create_for(files=files, expires_at=timezone.now() + timedelta(hours=1)), contents


def fetched(response) -> bytes:
    try:
        return b"".join(response.streaming_content)
    finally:
        response.close()


def test_a_zip_of_500_files_costs_one_get_per_member_sent_and_its_head_none(many, capsys):
    share, contents = many
    storage, client, url = storages["default"], Client(), f"/s/{share.token}/all.zip"
    with buckets.counted(storage) as on_head:
        head = client.head(url)
    with buckets.counted(storage) as on_get:
        whole = fetched(client.get(url))
    archive = zipfile.ZipFile(io.BytesIO(whole))
    infos = archive.infolist()
    ends = [info.header_offset for info in infos[1:]] + [archive.start_dir]  # where each member's data ends
    half = len(whole) // 2
    with buckets.counted(storage) as on_resume:
        rest = fetched(client.get(url, HTTP_RANGE=f"bytes={half}-"))
    sent_again = sum(end > half for end in ends)
    report(
        capsys,
        "a zip of 500 files in a bucket",
        head_requests=len(on_head),
        get_requests=len(on_get),
        resume_requests=len(on_resume),
        members_resumed=sent_again,
    )

    assert (head.status_code, int(head["Content-Length"])) == (200, len(whole))
    assert len(on_head) == 0
    assert archive.testzip() is None
    assert {info.filename: archive.read(info) for info in infos} == contents
    assert on_get.operations == ["GetObject"] * 500
    assert on_get.received == sum(len(data) for data in contents.values())  # each member's bytes, once
    assert rest == whole[half:]
    assert on_resume.operations == ["GetObject"] * sent_again


def read_into(received: bytearray, chunks) -> None:
    for chunk in chunks:
        received += chunk


def test_a_zip_member_whose_object_changed_size_cuts_the_zip_before_a_wrong_byte(bucket_storage, alice, make_file):
    files = [make_file(alice, f"{n}.txt", f"file {n}\n".encode() * 100) for n in range(3)]
    share = Share.create_for(files=files, expires_at=timezone.now() + timedelta(hours=1))
    storage = storages["default"]
    storage.delete(files[1].content.name)
    storage.save(files[1].content.name, ContentFile(b"shorter now\n"))
    response = Client().get(f"/s/{share.token}/all.zip")
    received = bytearray()
    with buckets.counted(storage) as calls, pytest.raises(OSError, match="not the 700 it was opened with"):
        read_into(received, response.streaming_content)
    response.close()

    assert calls.operations == ["GetObject", "GetObject"]  # the first member, then the changed one
    assert b"file 0\n" * 100 in received
    assert b"shorter now" not in received


def test_a_chunk_limit_under_a_part_with_a_bucket_stops_start_up_naming_it():
    bucket = "s3://files/media?endpoint=http://127.0.0.1:9&region=us-east-1"
    result = run_manage("check", SECRET_KEY="k" * 50, STORAGE_URL=bucket, TUS_MAX_CHUNK_BYTES=str(4 * MiB))
    assert result.returncode != 0
    assert "ImproperlyConfigured: TUS_MAX_CHUNK_BYTES must be at least 5242880 (5 MiB) with a bucket" in result.stderr
    enough = run_manage("check", SECRET_KEY="k" * 50, STORAGE_URL=bucket, TUS_MAX_CHUNK_BYTES=str(5 * MiB))
    assert enough.returncode == 0, enough.stderr
