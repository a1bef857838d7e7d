"""Concurrent requests against the real database file: counting stays exact.

Each thread is its own client with its own database connection, as under a
threaded or multi-process server; transaction=True so every request really
commits and the threads see each other's writes.
"""

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from sharing.models import Share

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.fault]

THREADS = 8
DOWNLOADS_PER_THREAD = 25
DATA = b"0123456789abcdef" * 256


@pytest.fixture
def share(alice, make_file):
    stored = make_file(alice, "data.bin", DATA, "application/octet-stream")
    return Share.create_for(file=stored, expires_at=timezone.now() + timedelta(hours=1))


def run_in_threads(count: int, work) -> list[BaseException]:
    """Run work(index) in `count` threads released together; return their errors."""
    barrier = threading.Barrier(count)
    errors: list[BaseException] = []

    def main(index: int) -> None:
        try:
            barrier.wait(timeout=30)
            work(index)
        except BaseException as exc:
            errors.append(exc)
        finally:
            # Each thread opened its own connection; leaving it open would keep
            # the test database busy when the test tears it down.
            connection.close()

    threads = [threading.Thread(target=main, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a thread hung"
    return errors


def fetch(client: Client, path: str) -> tuple[int, bytes]:
    response = client.get(path)
    content = b"".join(response.streaming_content) if response.streaming else response.content
    response.close()
    return response.status_code, content


def test_the_database_is_a_real_file():
    # In-memory SQLite would give every thread its own empty database.
    assert connection.vendor != "sqlite" or not connection.is_in_memory_db()


def test_concurrent_downloads_are_all_counted(share):
    statuses: list[int] = []
    bad_bodies = 0
    lock = threading.Lock()

    def download(_index: int) -> None:
        nonlocal bad_bodies
        client = Client()
        for _ in range(DOWNLOADS_PER_THREAD):
            status, content = fetch(client, f"/s/{share.token}")
            with lock:
                statuses.append(status)
                bad_bodies += status == 200 and content != DATA

    errors = run_in_threads(THREADS, download)

    assert errors == []
    assert len(statuses) == THREADS * DOWNLOADS_PER_THREAD
    assert set(statuses) == {200}, {s: statuses.count(s) for s in set(statuses)}
    assert bad_bodies == 0
    share.refresh_from_db()
    assert share.total_downloads == statuses.count(200) == THREADS * DOWNLOADS_PER_THREAD


def test_downloads_racing_an_unshare(share, alice):
    """Every 200 is counted, and no download that starts after the unshare is served."""
    served_before_unshare = threading.Semaphore(0)
    unshared_at: list[float] = []
    results: list[tuple[float, int]] = []  # (start time, status)
    lock = threading.Lock()
    downloaders = THREADS - 1

    def work(index: int) -> None:
        if index == 0:
            # Unshare once downloads are clearly under way, while they continue.
            for _ in range(3 * downloaders):
                served_before_unshare.acquire(timeout=30)
            owner = APIClient()
            owner.force_authenticate(alice)
            assert owner.delete(f"/api/shares/{share.pk}/").status_code == 204
            unshared_at.append(time.monotonic())
            return
        client = Client()
        for _ in range(1000):  # until the unshare is seen; bounded in case it never is
            started = time.monotonic()
            status, _content = fetch(client, f"/s/{share.token}")
            with lock:
                results.append((started, status))
            if status != 200:
                return
            served_before_unshare.release()

    errors = run_in_threads(THREADS, work)

    assert errors == []
    statuses = [status for _started, status in results]
    assert set(statuses) == {200, 410}
    # Each downloader stopped at its first refusal: the unshare reached them all.
    assert statuses.count(410) == downloaders
    share.refresh_from_db()
    assert share.status == "unshared"
    assert share.total_downloads == statuses.count(200)
    assert all(status == 410 for started, status in results if started > unshared_at[0])
