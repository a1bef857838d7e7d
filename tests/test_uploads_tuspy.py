"""Resumable uploads with an independent tus client (tuspy) and with raw
racing requests, against real gunicorn servers on the test's database (on
PostgreSQL two servers, as two nodes: a resume goes to the other one).

- a multi-megabyte file sent in small chunks is stored byte for byte;
- an upload stopped part-way is resumed by a new uploader from its URL;
- a chunk over TUS_MAX_CHUNK_BYTES is refused, and nothing is kept;
- many requests appending at one offset at once: one wins, the others get
  409, and the bytes are the winner's;
- many requests finishing one complete upload at once make one file.
"""

import hashlib
import http.client
import random
from datetime import timedelta

import pytest
from django.utils import timezone
from tusclient import client as tus
from tusclient.exceptions import TusCommunicationError, TusUploadFailed

from sharing.models import StorageAccount, StoredFile, quotas
from tests.helpers import in_threads, web_nodes
from tests.test_uploads_support import OFFSET_STREAM
from tokens.service import issue
from uploads.models import Upload, partial_path

pytestmark = [pytest.mark.fault, pytest.mark.django_db(transaction=True)]

MiB = 1024 * 1024
CHUNK_LIMIT = MiB
SIZE = 6 * MiB + 12345


@pytest.fixture(scope="module")
def data() -> bytes:
    return random.Random(20250101).randbytes(SIZE)


@pytest.fixture
def source(tmp_path, data):
    path = tmp_path / "source.bin"
    path.write_bytes(data)
    return path


@pytest.fixture
def servers(tmp_path, settings):
    with web_nodes(tmp_path, str(settings.MEDIA_ROOT), TUS_MAX_CHUNK_BYTES=str(CHUNK_LIMIT)) as ports:
        yield ports


@pytest.fixture
def token(alice) -> str:
    return issue(alice, name="test")[1]


def tus_client(port: int, token: str) -> tus.TusClient:
    return tus.TusClient(f"http://127.0.0.1:{port}/api/uploads/", headers={"Authorization": f"Token {token}"})


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_tuspy_uploads_a_file_in_small_chunks(servers, token, source, data):
    uploader = tus_client(servers[0], token).uploader(
        file_path=str(source),
        chunk_size=256 * 1024,
        metadata={"filename": "big.bin", "filetype": "application/octet-stream"},
        upload_checksum=True,  # sha1 on every chunk
    )
    uploader.upload()

    stored = StoredFile.objects.get()
    assert (stored.name, stored.size, stored.sha256) == ("big.bin", SIZE, sha256(data))
    assert stored.content.read() == data
    assert uploader.request.response_headers["upload-file"] == f"/api/files/{stored.pk}/"
    assert not partial_path(Upload.objects.get().pk).exists()


def test_an_interrupted_upload_is_resumed_by_a_new_uploader(servers, token, source, data):
    first = tus_client(servers[0], token).uploader(file_path=str(source), chunk_size=512 * 1024)
    first.upload(stop_at=5 * 512 * 1024 + 1000)  # stopped after some chunks, mid-file
    assert Upload.objects.get().offset == 5 * 512 * 1024 + 1000
    assert not StoredFile.objects.exists()

    # A new uploader knows only the URL; it asks the (other) server for the offset.
    again = tus_client(servers[-1], token).uploader(
        file_path=str(source), url=first.url.replace(str(servers[0]), str(servers[-1])), chunk_size=512 * 1024
    )
    assert again.offset == 5 * 512 * 1024 + 1000
    again.upload()

    stored = StoredFile.objects.get()
    assert (stored.size, stored.sha256) == (SIZE, sha256(data))


def test_a_chunk_above_the_limit_is_refused(servers, token, source):
    uploader = tus_client(servers[0], token).uploader(file_path=str(source), chunk_size=CHUNK_LIMIT + 1)

    # Refused before the body is read: the answer is a 413, or, when the
    # server's close beats the client's reading of it, a broken connection.
    with pytest.raises((TusUploadFailed, TusCommunicationError)) as refused:
        uploader.upload()
    if isinstance(refused.value, TusUploadFailed) and refused.value.status_code is not None:
        assert refused.value.status_code == 413
    assert Upload.objects.get().offset == 0
    uploader.chunk_size = CHUNK_LIMIT
    uploader.upload()
    assert StoredFile.objects.get().size == SIZE


def request(port: int, method: str, path: str, headers: dict, body: bytes = b"") -> tuple[int, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request(method, path, body=body, headers={"Tus-Resumable": "1.0.0", **headers})
        response = connection.getresponse()
        response.read()
        return response.status, {name.lower(): value for name, value in response.getheaders()}
    finally:
        connection.close()


def test_racing_appends_at_one_offset_make_one_winner(servers, token, alice):
    auth = {"Authorization": f"Token {token}"}
    chunk, racers = 512 * 1024, 12
    status, created = request(servers[0], "POST", "/api/uploads/", {**auth, "Upload-Length": str(2 * chunk)})
    assert status == 201
    path = created["location"].split(f":{servers[0]}", 1)[1]

    def append(n):
        body = bytes([n]) * chunk  # each racer's own bytes
        headers = {**auth, "Upload-Offset": "0", "Content-Type": OFFSET_STREAM}
        return request(servers[n % len(servers)], "PATCH", path, headers, body)[0]

    statuses = in_threads(append, racers, numbered=True)
    assert sorted(statuses) == [204] + [409] * (racers - 1)
    winner = statuses.index(204)
    assert Upload.objects.get().offset == chunk
    rest = {**auth, "Upload-Offset": str(chunk), "Content-Type": OFFSET_STREAM}
    assert request(servers[0], "PATCH", path, rest, b"z" * chunk)[0] == 204
    assert StoredFile.objects.get().sha256 == sha256(bytes([winner]) * chunk + b"z" * chunk)


def test_racing_finishers_make_one_file(servers, token, alice):
    """A complete upload whose finisher died: every HEAD tries to finish it."""
    now = timezone.now()
    quotas.reserve(alice.pk, 3 * MiB)  # as creating it through the API did
    upload = Upload.objects.create(
        owner=alice,
        length=3 * MiB,
        offset=3 * MiB,
        filename="stranded.bin",
        expires_at=now + timedelta(hours=1),
        writer="a-dead-finisher",
        writing_until=now - timedelta(seconds=1),
    )
    path = partial_path(upload.pk)
    path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
    path.write_bytes(b"s" * 3 * MiB)

    def look(n):
        return request(
            servers[n % len(servers)], "HEAD", f"/api/uploads/{upload.pk}", {"Authorization": f"Token {token}"}
        )

    answers = in_threads(look, 12, numbered=True)
    assert {status for status, _ in answers} == {200}
    stored = StoredFile.objects.get()
    assert stored.sha256 == sha256(b"s" * 3 * MiB)
    assert {headers.get("upload-file") for _, headers in answers} <= {None, f"/api/files/{stored.pk}/"}
    assert (
        request(servers[0], "HEAD", f"/api/uploads/{upload.pk}", {"Authorization": f"Token {token}"})[1]["upload-file"]
        == f"/api/files/{stored.pk}/"
    )
    account = StorageAccount.objects.get(pk=alice.pk)
    assert (account.used_bytes, account.reserved_bytes) == (3 * MiB, 0)  # the file counted once
