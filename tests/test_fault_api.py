"""Fault and load tests of the API over real HTTP: gunicorn, as deployed, on
a free port against the test database, with the expiry daemons running.

Each client thread owns its shares and works on them one request at a time,
so it knows, for every request, the deadline in effect when it started: a
download answered 200 although it started at or after that deadline (or after
an unshare had been answered) is a failure, whatever the daemons did.
"""

import bisect
import http.client
import json
import random
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

import pytest
from django.db import connection

from sharing.models import Share
from tests.helpers import (
    bulk_shares,
    free_port,
    report,
    start_manage,
    start_web,
    stop,
    wait_for_port,
    wait_for_text,
    wait_until,
)
from tokens.service import issue

pytestmark = pytest.mark.fault


class Client:
    """One keep-alive HTTP connection, timing every request."""

    def __init__(self, port: int, token: str | None = None):
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.headers = {"Authorization": f"Token {token}"} if token else {}

    def request(self, method: str, path: str, body=None, headers=None) -> tuple[int, bytes, float]:
        """Return (status, body, time the request started)."""
        headers = {**self.headers, **(headers or {})}
        if isinstance(body, dict):
            body, headers["Content-Type"] = json.dumps(body), "application/json"
        started = time.time()
        self.connection.request(method, path, body=body, headers=headers)
        response = self.connection.getresponse()
        return response.status, response.read(), started

    def close(self) -> None:
        self.connection.close()


def upload(client: Client, name: str, data: bytes) -> int:
    boundary = uuid.uuid4().hex
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
            f"Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        + data
        + f"\r\n--{boundary}--\r\n".encode()
    )
    status, content, _ = client.request(
        "POST", "/api/files/", body, {"Content-Type": f"multipart/form-data; boundary={boundary}"}
    )
    assert status == 201, content
    return json.loads(content)["id"]


def parse_time(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


@dataclass
class Tally:
    """What the clients saw, merged under a lock."""

    statuses: Counter = field(default_factory=Counter)
    downloads: Counter = field(default_factory=Counter)  # share id -> 200s served
    renewed_to: dict = field(default_factory=dict)  # share id -> deadline of its last 200 PATCH
    served_after_deadline: list = field(default_factory=list)
    served_after_unshare: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


@pytest.fixture
def web(tmp_path, settings):
    """gunicorn, 2 workers x 4 threads, serving the test database."""
    port = free_port()
    output = tmp_path / "web.out"
    server = start_web(port, output, MEDIA_ROOT=str(settings.MEDIA_ROOT))
    try:
        wait_for_port(port, 30, server)
        yield port, output
    finally:
        stop(server)


@pytest.fixture
def alice_token(alice):
    return issue(alice, name="test")[1]


def start_daemons(tmp_path, count: int):
    daemons = []
    for n in range(count):
        output = tmp_path / f"daemon{n}.out"
        daemons.append((start_manage("runexpiry", output=output), output))
    return daemons


@pytest.mark.timeout(180)
@pytest.mark.django_db(transaction=True)
def test_concurrent_clients_lose_nothing_while_daemons_expire_thousands(
    web, alice, alice_token, make_file, tmp_path, capsys
):
    port, web_output = web
    setup = Client(port, alice_token)
    file_ids = [upload(setup, f"file{n}.bin", bytes([n]) * 2048) for n in range(2)]
    setup.close()

    # Thousands of shares falling due during the run, for the daemons.
    background_file = make_file(alice, name="background.txt")
    offsets = [8 * i / 4000 for i in range(4000)]
    background_ids = bulk_shares(background_file, offsets, start_in=2)
    rows = Share.objects.filter(pk__in=background_ids[:: max(1, len(background_ids) // 400)])
    background = sorted((s.expires_at.timestamp(), s.pk, s.token) for s in rows)  # sampled for downloads

    daemons = start_daemons(tmp_path, 2)
    tally = Tally()
    duration, clients = 8.0, 6
    try:
        for _, output in daemons:
            wait_for_text(output, "runexpiry started", 30)
        started = time.time()
        threads = [
            threading.Thread(target=client_run, args=(port, alice_token, file_ids, background, tally, n, duration))
            for n in range(clients)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(duration + 60)
        elapsed = time.time() - started

        # Every share lives at most 5 s past the last renewal: all of them end.
        assert wait_until(lambda: not Share.objects.filter(status=Share.Status.ACTIVE).exists(), 20, 0.1)
    finally:
        daemon_results = []
        for process, _ in daemons:
            stop(process)
            daemon_results.append(process.returncode)
    assert daemon_results == [0, 0]

    shares = {s.pk: s for s in Share.objects.with_pending_downloads()}
    early = [pk for pk, s in shares.items() if s.status == Share.Status.EXPIRED and s.ended_at < s.expires_at]
    renewal_overridden = [
        pk
        for pk, deadline in tally.renewed_to.items()
        if abs(shares[pk].expires_at.timestamp() - deadline) > 1e-6
        or (shares[pk].status == Share.Status.EXPIRED and shares[pk].ended_at.timestamp() < deadline)
    ]
    count_mismatch = {
        pk: (shares[pk].total_downloads, served)
        for pk, served in tally.downloads.items()
        if shares[pk].total_downloads != served
    }
    never_downloaded_but_counted = [pk for pk, s in shares.items() if s.total_downloads and pk not in tally.downloads]
    server_errors = sum(n for status, n in tally.statuses.items() if status >= 500)
    outputs = web_output.read_text() + "".join(output.read_text() for _, output in daemons)
    report(
        capsys,
        f"{connection.vendor}: {clients} HTTP clients for {duration:g} s, 2 daemons, gunicorn 2x4",
        requests=tally.requests,
        requests_per_s=round(tally.requests / elapsed),
        statuses=dict(sorted(tally.statuses.items())),
        server_errors_5xx=server_errors,
        client_errors=len(tally.errors),
        served_after_expiry=len(tally.served_after_deadline),
        served_after_unshare=len(tally.served_after_unshare),
        renewals=len(tally.renewed_to),
        renewal_overridden=len(renewal_overridden),
        expired_early=len(early),
        download_count_mismatch=len(count_mismatch),
        shares_expired=sum(1 for s in shares.values() if s.status == Share.Status.EXPIRED),
    )
    assert tally.errors == []
    assert server_errors == 0, tally.statuses
    assert "database is locked" not in outputs
    assert tally.served_after_deadline == []
    assert tally.served_after_unshare == []
    assert renewal_overridden == []
    assert early == []
    assert count_mismatch == {}
    assert never_downloaded_but_counted == []
    assert len(tally.renewed_to) > 0
    assert tally.statuses[200] > 0
    assert tally.statuses[410] > 0  # some links were asked for after they ended


@dataclass
class Owned:
    token: str
    deadline: float
    unshared_at: float | None = None  # when the DELETE was answered


def client_run(port, token, file_ids, background, tally: Tally, seed: int, duration: float) -> None:
    rng = random.Random(seed)
    client = Client(port, token)
    mine: dict[int, Owned] = {}
    statuses, downloads = Counter(), Counter()
    renewed_to, after_deadline, after_unshare, errors = {}, [], [], []
    stop_at = time.time() + duration
    requests = 0
    try:
        while time.time() < stop_at:
            requests += 1
            roll = rng.random()
            try:
                if len(mine) < 4 or roll < 0.15:
                    body = {"file": rng.choice(file_ids), "expires_in": rng.randint(1, 4)}
                    status, content, _ = client.request("POST", "/api/shares/", body)
                    if status == 201:
                        data = json.loads(content)
                        mine[data["id"]] = Owned(data["token"], parse_time(data["expires_at"]))
                elif roll < 0.30:
                    share_id = rng.choice(list(mine))
                    body = {"expires_in": rng.randint(1, 5)}
                    status, content, _ = client.request("PATCH", f"/api/shares/{share_id}/", body)
                    if status == 200:
                        deadline = parse_time(json.loads(content)["expires_at"])
                        mine[share_id].deadline = renewed_to[share_id] = deadline
                elif roll < 0.38:
                    share_id = rng.choice(list(mine))
                    status, _, _ = client.request("DELETE", f"/api/shares/{share_id}/")
                    if status == 204 and mine[share_id].unshared_at is None:
                        mine[share_id].unshared_at = time.time()
                elif roll < 0.70:
                    share_id = rng.choice(list(mine))
                    owned = mine[share_id]
                    status, _, started = client.request("GET", f"/s/{owned.token}")
                    if status == 200:
                        downloads[share_id] += 1
                        if started >= owned.deadline:
                            after_deadline.append((share_id, started - owned.deadline))
                        if owned.unshared_at is not None and started >= owned.unshared_at:
                            after_unshare.append(share_id)
                else:
                    # A background share near its deadline, while a daemon expires it.
                    i = bisect.bisect_left(background, (time.time(),))
                    deadline, share_id, share_token = background[
                        min(len(background) - 1, max(0, i + rng.randint(-3, 3)))
                    ]
                    status, _, started = client.request("GET", f"/s/{share_token}")
                    if status == 200:
                        downloads[share_id] += 1
                        if started >= deadline:
                            after_deadline.append((share_id, started - deadline))
                statuses[status] += 1
            except (OSError, http.client.HTTPException) as exc:
                errors.append(repr(exc))
                client.close()
                client = Client(port, token)
    finally:
        client.close()
        with tally.lock:
            tally.statuses.update(statuses)
            tally.downloads.update(downloads)
            tally.renewed_to.update(renewed_to)
            tally.served_after_deadline += after_deadline
            tally.served_after_unshare += after_unshare
            tally.errors += errors
            tally.requests += requests


@pytest.mark.timeout(120)
@pytest.mark.django_db(transaction=True)
def test_no_download_is_served_once_its_deadline_has_passed_even_without_a_daemon(web, alice, make_file, capsys):
    port, web_output = web
    stored = make_file(alice, name="doc.txt", data=b"x" * 1024)
    count = 40
    # The first deadline 4 s out: room for the clients to be well under way
    # before it on a loaded machine.
    ids = bulk_shares(stored, [0.05 * i for i in range(count)], start_in=4)
    shares = {s.pk: (s.token, s.expires_at.timestamp()) for s in Share.objects.filter(pk__in=ids)}
    by_deadline = sorted((deadline, pk) for pk, (_, deadline) in shares.items())
    last_deadline = by_deadline[-1][0]

    results, errors, lock = [], [], threading.Lock()

    def hammer(seed: int) -> None:
        rng, client, seen = random.Random(seed), Client(port), []
        try:
            while time.time() < last_deadline + 0.5:
                # Mostly the shares whose deadline is within 0.2 s of now.
                i = bisect.bisect_left(by_deadline, (time.time(),))
                _, pk = by_deadline[min(count - 1, max(0, i + rng.randint(-4, 3)))]
                status, _, started = client.request("GET", f"/s/{shares[pk][0]}")
                seen.append((pk, started, time.time(), status))
        except Exception as exc:  # shown by the assertions below, not lost with the thread
            with lock:
                errors.append(repr(exc))
        finally:
            client.close()
            with lock:
                results.extend(seen)

    threads = [threading.Thread(target=hammer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    statuses = Counter(status for *_, status in results)
    served = Counter(pk for pk, *_, status in results if status == 200)
    after = [
        (pk, started - shares[pk][1])
        for pk, started, _, status in results
        if status == 200 and started >= shares[pk][1]
    ]
    margins = [shares[pk][1] - started for pk, started, _, status in results if status == 200]
    # A 410 is wrong only if its answer arrived before the deadline: a request
    # that waited for the lock past the deadline is rightly refused.
    refused_before = [pk for pk, _, answered, status in results if status == 410 and answered < shares[pk][1]]
    report(
        capsys,
        f"{connection.vendor}: GETs around {count} deadlines, no daemon",
        requests=len(results),
        statuses=dict(sorted(statuses.items())),
        served_after_expiry=len(after),
        closest_200_before_deadline_ms=round(min(margins) * 1000, 2) if margins else None,
    )
    assert errors == [], (errors, web_output.read_text()[-2000:])
    assert after == []
    assert statuses[200] > 0, (statuses, web_output.read_text()[-2000:])
    assert statuses[410] > 0
    assert set(statuses) <= {200, 410}, statuses
    assert min(margins) < 0.25  # requests did land right before deadlines
    assert refused_before == []  # and the check is not simply refusing early
    for pk, share in ((s.pk, s) for s in Share.objects.filter(pk__in=ids)):
        assert share.status == Share.Status.ACTIVE  # nobody marked them: the request's own clock refused them
        assert share.total_downloads == served[pk]
    assert "database is locked" not in web_output.read_text()
