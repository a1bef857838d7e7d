"""The shared rate limiter: exact under concurrency, on both backends."""

import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from datetime import timedelta

import pytest
from django.test import RequestFactory
from freezegun import freeze_time

from ratelimit.counters import reset_shared_counters, shared_counters
from ratelimit.limits import RateLimit, client_address
from tests.helpers import REPO_ROOT, subprocess_env, wait_until
from tests.ratelimit_backends import allowed_in_processes, backend  # noqa: F401  (fixture)


def ident() -> str:
    return uuid.uuid4().hex


def test_exactly_the_limit_is_allowed_then_a_retry_time(backend):  # noqa: F811
    limit = RateLimit("t", limit=3, window=60)
    who = ident()
    decisions = [limit.hit(who) for _ in range(5)]
    assert [d.allowed for d in decisions] == [True, True, True, False, False]
    assert [d.remaining for d in decisions[:3]] == [2, 1, 0]
    assert 1 <= decisions[3].retry_after <= 66
    assert limit.hit(ident()).allowed  # others are not affected


def test_a_refund_gives_the_slot_back(backend):  # noqa: F811
    limit = RateLimit("t", limit=2, window=60)
    who = ident()
    assert limit.hit(who).allowed
    assert limit.hit(who).allowed
    assert not limit.hit(who).allowed
    limit.refund(who)
    assert limit.check(who).allowed
    assert limit.hit(who).allowed
    assert not limit.hit(who).allowed


def test_the_window_slides(backend):  # noqa: F811
    limit = RateLimit("t", limit=2, window=60)
    who = ident()
    with freeze_time("2026-05-01 10:00:00") as frozen:
        assert limit.hit(who).allowed
        frozen.tick(timedelta(seconds=30))
        assert limit.hit(who).allowed
        refused = limit.hit(who)
        assert not refused.allowed
        assert refused.retry_after == 36  # the first hit's bucket leaves the window 66 s after it
        frozen.tick(timedelta(seconds=35))
        assert not limit.hit(who).allowed  # 65 s: still inside the window's 11 buckets
        frozen.tick(timedelta(seconds=2))
        assert limit.hit(who).allowed  # the first hit has left the window
        assert not limit.hit(who).allowed  # the second is still in it


def test_racing_threads_get_exactly_the_limit(backend):  # noqa: F811
    limit = RateLimit("t", limit=5, window=60)
    who = ident()
    results = []
    barrier = threading.Barrier(24)

    def hit():
        barrier.wait(10)
        results.append(limit.hit(who).allowed)

    threads = [threading.Thread(target=hit) for _ in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert results.count(True) == 5
    assert len(results) == 24


CHILD = """
import sys, django
django.setup()
from ratelimit.limits import RateLimit
limit = RateLimit("proc", limit=int(sys.argv[2]), window=600)
print(sum(limit.hit(sys.argv[1]).allowed for _ in range(int(sys.argv[3]))))
"""


def test_processes_share_the_counts(backend, settings, tmp_path):  # noqa: F811
    allowed = allowed_in_processes(settings, backend, CHILD, ident(), "12", "10")
    assert sum(allowed) == 12  # 30 tries, one limit, three processes


# Each child opens a new counters file per round at the round's start time,
# as the workers of a fresh deployment do, and prints the counts it got.
OPENING_CHILD = """
import sys, time
from pathlib import Path
from ratelimit.counters import SqliteCounters
folder, start, rounds = Path(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
counts = []
for n in range(rounds):
    time.sleep(max(0.0, start + n * 0.1 - time.time()))
    counts.append(SqliteCounters(folder / f"round-{n}.sqlite3").incr("k", 60))
print(sum(counts))
"""


def test_processes_opening_a_new_counters_file_together_all_count(settings, tmp_path):
    """The first connections to a new file switch it to WAL and create its
    table at the same moment; none of them may fail "database is locked"."""
    processes, rounds = 6, 15
    start = time.time() + 4  # past every child's start-up
    counted = allowed_in_processes(
        settings, "sqlite", OPENING_CHILD, str(tmp_path), str(start), str(rounds), processes=processes
    )
    # Each round's increments are counted 1..6 in some order, in every round.
    assert sum(counted) == rounds * sum(range(1, processes + 1))


@pytest.mark.parametrize(
    ("remote", "forwarded", "proxies", "expected"),
    [
        ("192.0.2.7", "", 0, "192.0.2.7"),
        ("192.0.2.7", "203.0.113.9", 0, "192.0.2.7"),  # no trusted proxy: the header is ignored
        ("10.0.0.1", "198.51.100.1, 203.0.113.9", 1, "203.0.113.9"),  # the hop the proxy added
        ("10.0.0.1", "forged, 203.0.113.9, 10.0.0.2", 2, "203.0.113.9"),
        ("10.0.0.1", "", 1, "10.0.0.1"),
        ("2001:db8:1:2:3:4:5:6", "", 0, "2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff::1", "", 0, "2001:db8:1:2::/64"),  # same subscriber
        ("::ffff:192.0.2.7", "", 0, "192.0.2.7"),
        ("not an address", "", 0, "not an address"),
    ],
)
def test_client_address(settings, remote, forwarded, proxies, expected):
    settings.NUM_PROXIES = proxies
    request = RequestFactory().get("/", REMOTE_ADDR=remote, HTTP_X_FORWARDED_FOR=forwarded)
    assert client_address(request) == expected


def test_sqlite_increments_arriving_together_share_one_transaction(settings, tmp_path):
    """Hits that arrive while the counters' file is locked by another writer
    all wait in one batch, then each gets its own count."""
    settings.RATELIMIT_SQLITE_PATH = tmp_path / "counters.sqlite3"
    reset_shared_counters()
    counters = shared_counters()
    limit = RateLimit("batch", limit=100, window=60)
    who = ident()
    limit.hit(who)  # creates the file and its table
    counts = []
    holder = sqlite3.connect(settings.RATELIMIT_SQLITE_PATH, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    threads = [threading.Thread(target=lambda: counts.append(limit.hit(who).remaining)) for _ in range(6)]
    try:
        for thread in threads:
            thread.start()
        assert wait_until(lambda: len(counters.batches._queued) == 6, timeout=10), "the hits did not queue together"
    finally:
        holder.execute("COMMIT")
        holder.close()
    for thread in threads:
        thread.join(30)
    assert sorted(counts) == [93, 94, 95, 96, 97, 98]  # every hit counted once
    reset_shared_counters()


# Loads the web application and its URLconf, as gunicorn's --preload does,
# picks the counters as a first request would, and says whether the Redis
# client came with them.
LOADS_THE_WEB = """
import sys
from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver
get_wsgi_application()
get_resolver().url_patterns
from ratelimit.counters import shared_counters
shared_counters()
print("redis" in sys.modules)
"""


@pytest.mark.parametrize(("redis_url", "loaded"), [("", "False"), ("redis://127.0.0.1:6379/0", "True")])
def test_the_redis_client_is_loaded_only_where_redis_is_configured(redis_url, loaded):
    # ~6 MB of the web server's idle memory (ratelimit.counters).
    env = subprocess_env(REDIS_URL=redis_url, SECRET_KEY="test")
    done = subprocess.run(
        [sys.executable, "-c", LOADS_THE_WEB], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == loaded
