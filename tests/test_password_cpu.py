"""What a right link password costs a real server: 120 HEADs with
X-Share-Password (as curl -C -, aria2c -x4 and every resume send it) to
gunicorn checking a PBKDF2 hash at Django's full iteration count, the
deployment's default hasher. Each request used to hash the password again
(about 0.2 s of CPU each); now the first one does and the worker remembers
it (links.remembered).

The figure compared is the worker's CPU time (user + system, from
/proc/<pid>/stat), against what the same hash costs here times the number
of requests, a floor under what the server spent when every request hashed:
no wall-clock time is asserted."""

import http.client
import os
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth import hashers
from django.utils import timezone

from sharing.models import Share
from tests.helpers import free_port, report, start_web, stop, wait_for_port

pytestmark = [pytest.mark.fault, pytest.mark.django_db(transaction=True)]

REQUESTS = 120
PASSWORD = "open sesame"
PBKDF2 = "django.contrib.auth.hashers.PBKDF2PasswordHasher"


def workers_cpu(master: int) -> float:
    """CPU seconds (user + system) the gunicorn workers of `master` used so far."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in Path(f"/proc/{master}/task/{master}/children").read_text().split():
        # Fields after the command's closing parenthesis start at field 3;
        # utime and stime are fields 14 and 15.
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / ticks


def one_hash_cpu(encoded: str) -> float:
    """CPU seconds one check of `encoded` costs in this process (the least of three)."""
    costs = []
    for _ in range(3):
        start = time.thread_time()
        assert hashers.check_password(PASSWORD, encoded)
        costs.append(time.thread_time() - start)
    return min(costs)


def heads(port: int, path: str, count: int, headers: dict[str, str]) -> list[int]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    statuses = []
    try:
        for _ in range(count):
            conn.request("HEAD", path, headers=headers)
            response = conn.getresponse()
            response.read()
            statuses.append(response.status)
    finally:
        conn.close()
    return statuses


def test_120_heads_with_the_right_password_cost_one_hash_not_120(settings, tmp_path, shared_file, capsys):
    settings.PASSWORD_HASHERS = [PBKDF2]  # what the server uses: Django's defaults
    share = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1), password=PASSWORD)
    assert share.password_hash.startswith("pbkdf2_sha256$")
    per_hash = one_hash_cpu(share.password_hash)

    port = free_port()
    # One worker: the figure is one process's, and the memory is per worker.
    server = start_web(port, tmp_path / "web.log", workers=1, threads=4, MEDIA_ROOT=str(settings.MEDIA_ROOT))
    try:
        wait_for_port(port, 30, server)
        path = f"/s/{share.token}"
        assert heads(port, path, 1, {}) == [403]  # warm: the app loaded, no password checked
        before = workers_cpu(server.pid)
        statuses = heads(port, path, REQUESTS, {"X-Share-Password": PASSWORD})
        used = workers_cpu(server.pid) - before
    finally:
        stop(server)

    assert statuses == [200] * REQUESTS
    every_request_hashing = REQUESTS * per_hash  # the least the server spent when each request hashed
    report(
        capsys,
        f"{REQUESTS} HEADs with the right X-Share-Password (PBKDF2, one gunicorn worker)",
        one_hash_cpu_s=f"{per_hash:.3f}",
        before_at_least_s=f"{every_request_hashing:.2f}",
        after_s=f"{used:.2f}",
        ratio=f"{used / every_request_hashing:.3%}",
    )
    assert used < 0.05 * every_request_hashing
