"""Two web servers (different ports, no shared disk) and two expiry daemons
on one PostgreSQL database and one bucket (moto's S3 server): a file
uploaded through one is downloaded through the other, a tus upload's
chunks go to either, and an ephemeral file's object leaves the bucket
within 2 s of its share's deadline."""

import hashlib
import time

import httpx
import pytest
from django.db import connection
from django.utils import timezone

from sharing.models import Share, StoredFile
from tests import buckets
from tests.helpers import free_port, report, start_manage, start_web, stop, storage_env, wait_for_port, wait_for_text
from tokens.service import issue

pytestmark = [pytest.mark.fault, pytest.mark.django_db(transaction=True)]

DATA = hashlib.sha256(b"seed").digest() * (3 * 1024 * 1024 // 32)  # 3 MiB


@pytest.fixture
def two_nodes(bucket_storage, tmp_path):
    """Two web servers and two daemons, each with a MEDIA_ROOT of its own."""
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: several nodes share one database")
    started, ports = [], []
    try:
        for n in range(2):
            env = storage_env(tmp_path / f"node{n}")
            port = free_port()
            started.append(start_web(port, tmp_path / f"web{n}.log", workers=2, threads=4, **env))
            ports.append(port)
            output = tmp_path / f"daemon{n}.out"
            started.append(start_manage("runexpiry", "--pickup-interval", "0.05", output=output, **env))
            wait_for_text(output, "refresh:", 30, process=started[-1])
        for port, server in zip(ports, started[::2], strict=True):
            wait_for_port(port, 30, server)
        yield ports
    finally:
        for process in started:
            stop(process)


@pytest.mark.timeout(120)
def test_upload_on_one_node_download_on_the_other_and_the_object_goes_at_the_deadline(
    two_nodes, bucket_storage, alice, capsys
):
    endpoint, bucket = bucket_storage
    first, second = (f"http://127.0.0.1:{port}" for port in two_nodes)
    auth = {"Authorization": f"Token {issue(alice, name='test')[1]}"}

    with httpx.Client(timeout=30) as client:
        uploaded = client.post(
            f"{first}/api/files/",
            headers=auth,
            files={"file": ("photos.bin", DATA, "application/octet-stream")},
            data={"delete_when_unshared": "true"},
        )
        assert uploaded.status_code == 201, uploaded.text
        stored = StoredFile.objects.get(pk=uploaded.json()["id"])
        assert buckets.keys(endpoint, bucket) == [f"media/{stored.content.name}"]

        created = client.post(f"{second}/api/shares/", headers=auth, json={"files": [stored.pk], "expires_in": 4})
        assert created.status_code == 201, created.text
        share = Share.objects.get(pk=created.json()["id"])
        link = f"/s/{share.token}"

        whole = client.get(f"{second}{link}")
        assert (whole.status_code, hashlib.sha256(whole.content).digest()) == (200, hashlib.sha256(DATA).digest())
        tail = client.get(f"{first}{link}", headers={"Range": "bytes=3000000-"})
        assert (tail.status_code, tail.content) == (206, DATA[3000000:])

        deadline = share.expires_at
        while timezone.now() < deadline:
            time.sleep(0.01)
        assert client.get(f"{first}{link}").status_code == 410
        assert client.get(f"{second}{link}").status_code == 410

    gone_at = None
    while (timezone.now() - deadline).total_seconds() < 10:
        if not buckets.keys(endpoint, bucket):
            gone_at = timezone.now()
            break
        time.sleep(0.02)
    assert gone_at is not None, "the ephemeral file's object is still in the bucket 10 s after the deadline"
    late = (gone_at - deadline).total_seconds()
    report(capsys, "ephemeral object left the bucket after its deadline", seconds=round(late, 3))
    assert late < 2
    assert not StoredFile.objects.filter(pk=stored.pk).exists()


@pytest.mark.timeout(120)
def test_a_tus_upload_whose_chunks_alternate_between_the_nodes(two_nodes, bucket_storage, alice):
    """No node keeps an upload's bytes: each chunk may go to either."""
    endpoint, bucket = bucket_storage
    nodes = [f"http://127.0.0.1:{port}" for port in two_nodes]
    auth = {"Authorization": f"Token {issue(alice, name='test')[1]}", "Tus-Resumable": "1.0.0"}
    data = DATA * 6  # 18 MiB: whole parts and a tail
    chunk = 5 * 1024 * 1024 + 7
    with httpx.Client(timeout=60) as client:
        created = client.post(
            f"{nodes[0]}/api/uploads/", headers={**auth, "Upload-Length": str(len(data)), "Upload-Metadata": ""}
        )
        assert created.status_code == 201, created.text
        path = httpx.URL(created.headers["Location"]).path
        for n, offset in enumerate(range(0, len(data), chunk)):
            sent = client.patch(
                f"{nodes[n % 2]}{path}",
                headers={**auth, "Upload-Offset": str(offset), "Content-Type": "application/offset+octet-stream"},
                content=data[offset : offset + chunk],
            )
            assert sent.status_code == 204, (n, sent.text)
        stored = StoredFile.objects.get(owner=alice)
        assert stored.sha256 == hashlib.sha256(data).hexdigest()
        assert buckets.keys(endpoint, bucket) == [f"media/{stored.content.name}"]
