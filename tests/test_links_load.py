"""Download limits and resumes over real HTTP: gunicorn with several workers
(separate processes, as deployed), on SQLite and on PostgreSQL.

With max_downloads = k and many clients at once, exactly k full downloads are
served, every other request gets 410 and the counter ends at k: no request is
counted and then not served, and none is served without being counted.
"""

import hashlib
import http.client
import shutil
import subprocess
import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from sharing.models import Share
from tests.helpers import free_port, report, start_web, stop, wait_for_port, wait_until, web_nodes

pytestmark = [pytest.mark.fault, pytest.mark.django_db(transaction=True)]

CLIENTS = 200
LIMIT = 5


@pytest.fixture
def webs(tmp_path, settings):
    """The ports of the web servers: one with 4 workers on SQLite (one
    machine), two with 2 workers each on PostgreSQL (two nodes)."""
    with web_nodes(tmp_path, str(settings.MEDIA_ROOT)) as ports:
        yield ports


@pytest.fixture
def web(webs):
    return webs[0]


def fetch(port: int, path: str, headers=None) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("GET", path, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_exactly_the_limit_of_simultaneous_downloads_is_served(webs, alice, make_file, capsys):
    data = bytes(range(256)) * 400  # 100 KiB: a body takes a while to send
    stored = make_file(alice, name="hot.bin", data=data)
    share = Share.create_for(file=stored, expires_at=timezone.now() + timedelta(hours=1), max_downloads=LIMIT)
    path = reverse("public-share", args=[share.token])

    results = [None] * CLIENTS
    barrier = threading.Barrier(CLIENTS)

    def client(n: int) -> None:
        barrier.wait(30)
        results[n] = fetch(webs[n % len(webs)], path)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)

    statuses = Counter(status for status, _ in results)
    full = sum(1 for status, body in results if status == 200 and body == data)
    share.refresh_from_db()
    report(
        capsys,
        f"{CLIENTS} simultaneous GETs, max_downloads={LIMIT}",
        servers=len(webs),
        statuses=dict(statuses),
        full_bodies=full,
        counter=share.total_downloads,
    )
    assert statuses == {200: LIMIT, 410: CLIENTS - LIMIT}
    assert full == LIMIT
    assert share.total_downloads == LIMIT
    assert (share.status, share.end_reason) == (Share.Status.EXPIRED, Share.EndReason.DOWNLOAD_LIMIT)


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_curl_resumes_a_broken_download_and_it_counts_once(web, alice, make_file, tmp_path):
    data = hashlib.sha256(b"seed").digest() * (50 * 1024 * 1024 // 32)  # 50 MiB
    stored = make_file(alice, name="big.bin", data=data)
    share = Share.create_for(file=stored, expires_at=timezone.now() + timedelta(hours=1), max_downloads=3)
    url = f"http://127.0.0.1:{web}{reverse('public-share', args=[share.token])}"
    out = tmp_path / "big.bin"
    # No cookie jar: the resume is a plain Range request the byte budget allows.
    curl = ["curl", "-sS", "-o", str(out)]

    # A slow link that breaks half-way: curl gives up after 5 s at 5 MB/s (the
    # whole file would take 10 s), room for a loaded server's first byte.
    broken = subprocess.run([*curl, "--limit-rate", "5M", "--max-time", "5", url], check=False)
    assert broken.returncode == 28  # timed out: the download broke
    assert 0 < out.stat().st_size < len(data)

    resumed = subprocess.run([*curl, "-f", "-C", "-", url], check=False, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert hashlib.sha256(out.read_bytes()).hexdigest() == hashlib.sha256(data).hexdigest()
    assert wait_until(lambda: Share.objects.filter(pk=share.pk, bytes_reserved=0).exists(), 30)
    share.refresh_from_db()
    assert share.total_downloads == 1
    # The broken download and its resume together cost one copy (and what
    # was in flight at the break): two of the three are left.
    assert share.downloads_left == 2


def test_a_range_from_a_later_byte_counts_no_download(web, alice, make_file):
    stored = make_file(alice, name="f.bin", data=b"0123456789")
    share = Share.create_for(file=stored, expires_at=timezone.now() + timedelta(hours=1))
    path = reverse("public-share", args=[share.token])
    status, body = fetch(web, path, {"Range": "bytes=1-"})
    assert (status, body) == (206, b"123456789")
    share.refresh_from_db()
    assert share.total_downloads == 0
    # A range from byte 0 starts a download: it counts.
    assert fetch(web, path, {"Range": "bytes=0-4"}) == (206, b"01234")
    share.refresh_from_db()
    assert share.total_downloads == 1


def test_the_eleventh_wrong_password_is_refused_whichever_worker_answers(tmp_path, settings, alice, make_file):
    from tests.ratelimit_backends import REDIS_URL, require_redis

    require_redis()
    share = Share.create_for(
        file=make_file(alice), expires_at=timezone.now() + timedelta(hours=1), password="correct horse"
    )
    port = free_port()
    server = start_web(
        port,
        tmp_path / "web.log",
        workers=2,
        threads=1,
        MEDIA_ROOT=str(settings.MEDIA_ROOT),
        REDIS_URL=REDIS_URL,
        # A cache of this run's own, so other runs' counts never mix in.
        CACHE_KEY_PREFIX=f"test-{share.token[:12]}",
    )
    try:
        wait_for_port(port, 30, server)
        path = reverse("public-share", args=[share.token])
        # A new connection per guess: the two workers take turns answering.
        answers = [fetch(port, path, {"X-Share-Password": f"guess {n}"})[0] for n in range(11)]
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request("GET", path, headers={"X-Share-Password": "guess 12"})
        last = connection.getresponse()
        last.read()
    finally:
        stop(server)
    assert answers == [403] * 10 + [429]
    assert last.status == 429
    assert int(last.getheader("Retry-After")) >= 1
