"""Big uploads behind a proxy with a body limit, with an independent tus
client (tuspy): Debian's nginx in front of gunicorn as docs/deployment.md
configures it, but with client_max_body_size 6m (a common limit in front of
self-hosted services). A 200 MB file cannot go as one multipart request;
with tus in 5 MiB chunks it goes, and survives being stopped twice, each
time resumed by a new uploader from the upload's URL, byte for byte."""

import hashlib
import http.client
from pathlib import Path

import pytest
from tusclient import client as tus

from sharing.models import StoredFile
from tests.proxying import nginx_before_gunicorn
from tokens.service import issue
from uploads.models import Upload

pytestmark = [pytest.mark.fault, pytest.mark.django_db(transaction=True)]

MiB = 1024 * 1024
SIZE = 200 * MiB + 4321
CHUNK = 5 * MiB  # the server's TUS_MAX_CHUNK_BYTES here, under the proxy's 6m
PROXY_LIMIT = "client_max_body_size 6m;\n"


@pytest.fixture
def source(tmp_path) -> tuple[Path, str]:
    """200 MB of bytes that differ all along (a repeated block would hide a misplaced chunk)."""
    path, digest = tmp_path / "source.bin", hashlib.sha256()
    with path.open("wb") as out:
        for n in range(SIZE // MiB + 1):
            block = hashlib.sha512(n.to_bytes(8, "big")).digest() * (MiB // 64)
            block = block[: min(MiB, SIZE - n * MiB)]
            digest.update(block)
            out.write(block)
    return path, digest.hexdigest()


@pytest.fixture
def proxy(tmp_path, settings):
    with nginx_before_gunicorn(
        tmp_path,
        str(settings.MEDIA_ROOT),
        extra_locations=PROXY_LIMIT,
        workers=2,
        NUM_PROXIES="1",
        TUS_MAX_CHUNK_BYTES=str(CHUNK),
    ) as port:
        yield port


@pytest.fixture
def token(alice) -> str:
    return issue(alice, name="test")[1]


def test_a_whole_file_in_one_request_is_refused_by_the_proxy(proxy, token):
    connection = http.client.HTTPConnection("127.0.0.1", proxy, timeout=60)
    body = b"--b\r\nContent-Disposition: form-data; name=file; filename=big.bin\r\n\r\n" + b"x" * (7 * MiB)
    body += b"\r\n--b--\r\n"
    try:
        connection.request(
            "POST",
            "/api/files/",
            body,
            {"Authorization": f"Token {token}", "Content-Type": "multipart/form-data; boundary=b"},
        )
        status = connection.getresponse().status
    finally:
        connection.close()
    assert status == 413  # nginx's own answer: the limit is the proxy's
    assert not StoredFile.objects.exists()


def test_200_mb_in_5_mib_chunks_stopped_twice_and_resumed(proxy, token, source):
    path, digest = source
    client = tus.TusClient(f"http://127.0.0.1:{proxy}/api/uploads/", headers={"Authorization": f"Token {token}"})
    metadata = {"filename": "big.bin", "filetype": "application/octet-stream"}

    first = client.uploader(file_path=str(path), chunk_size=CHUNK, metadata=metadata)
    first.upload(stop_at=70 * MiB)  # the first interruption
    url = first.url
    assert Upload.objects.get().offset == first.offset >= 70 * MiB

    second = client.uploader(file_path=str(path), chunk_size=CHUNK, metadata=metadata, url=url)
    assert second.offset == first.offset  # it asked the server where to go on from
    second.upload(stop_at=140 * MiB)  # the second interruption
    assert not StoredFile.objects.exists()  # no half file listed

    third = client.uploader(file_path=str(path), chunk_size=CHUNK, metadata=metadata, url=url)
    assert third.offset == second.offset >= 140 * MiB
    third.upload()

    stored = StoredFile.objects.get()
    assert (stored.name, stored.size, stored.sha256) == ("big.bin", SIZE, digest)
