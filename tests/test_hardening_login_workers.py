"""The log-in limit holds across gunicorn workers, on both counter stores:
Redis (REDIS_URL, what several nodes share) and the machine's SQLite file
(the default without REDIS_URL)."""

import http.client
import re
import threading
import urllib.parse
import uuid

import pytest

from tests.helpers import free_port, start_web, stop, wait_for_port
from tests.ratelimit_backends import REDIS_URL, require_redis

ATTEMPTS = 16
LIMIT = 5


def post_login(port: int, username: str, password: str) -> tuple[int, str | None]:
    body = urllib.parse.urlencode({"username": username, "password": password})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", "/api/auth/token/", body, {"Content-Type": "application/x-www-form-urlencoded"})
        response = conn.getresponse()
        response.read()
        return response.status, response.getheader("Retry-After")
    finally:
        conn.close()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("store", ["sqlite", "redis"])
def test_the_username_limit_holds_whichever_worker_answers(store, tmp_path, alice):
    env = {"LOGIN_FAILURES_PER_USERNAME": str(LIMIT), "LOGIN_ATTEMPTS_PER_ADDRESS": "1000"}
    if store == "redis":
        require_redis()
        env.update(REDIS_URL=REDIS_URL, CACHE_KEY_PREFIX=f"test-{uuid.uuid4().hex}")
    port = free_port()
    log = tmp_path / "web.log"
    # Sync workers (one request at a time each), so parallel attempts are
    # spread over both; the access log names the worker that answered.
    server = start_web(port, log, workers=2, threads=1, args=("--access-logformat", "%(p)s %(U)s %(s)s"), **env)
    results = []
    barrier = threading.Barrier(ATTEMPTS)

    def attempt(n: int) -> None:
        barrier.wait(30)
        results.append(post_login(port, "alice" if n % 2 else "ALICE", f"guess-{n}"))

    try:
        wait_for_port(port, 30, server)
        threads = [threading.Thread(target=attempt, args=(n,)) for n in range(ATTEMPTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        stop(server)

    statuses = sorted(status for status, _ in results)
    assert statuses == [400] * LIMIT + [429] * (ATTEMPTS - LIMIT), log.read_text()
    assert all(int(retry_after) >= 1 for status, retry_after in results if status == 429)
    workers = set(re.findall(r"<(\d+)> /api/auth/token/ \d{3}", log.read_text()))
    assert len(workers) == 2, log.read_text()  # both workers answered attempts
