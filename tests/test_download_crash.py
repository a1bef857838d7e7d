"""A web worker killed in the middle of a stream of downloads: every
download a client received whole is in the link's history.

Each download's record (its history event, and its count) commits in the
transaction that allows it, before the first byte of the response is sent;
downloads arriving together share that transaction
(sharing.models.quick_downloads) and each response waits for its batch's
commit, so no answer the client got can be lost with the process. This test
is how to tell that batching kept it so. Each request carries its own User-Agent, which the history
keeps, so the test checks every answered download by name, not by count.
"""

import http.client
import os
import signal
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from sharing.models import Share, ShareEvent
from tests.helpers import free_port, report, start_web, stop, wait_for_port, wait_until

pytestmark = [pytest.mark.fault, pytest.mark.django_db(transaction=True)]

CLIENTS = 16
# Answers to see before the kill, and after it: the kill falls in a stream of
# downloads, and the service is seen to go on after it.
ANSWERED_BEFORE = 200
ANSWERED_AFTER = 200
DATA = b"a hot link's 100 bytes".ljust(100, b".")


def workers_of(master: int) -> list[int]:
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return [int(pid) for pid in children]


@pytest.mark.timeout(240)
@pytest.mark.parametrize("limit", [None, 100_000], ids=["unlimited", "limited"])
def test_a_killed_worker_loses_no_answered_download(tmp_path, settings, alice, make_file, limit, capsys):
    stored = make_file(alice, name="hot.txt", data=DATA)
    share = Share.create_for(file=stored, expires_at=timezone.now() + timedelta(hours=1), max_downloads=limit)
    port = free_port()
    server = start_web(port, tmp_path / "web.log", workers=2, threads=4, MEDIA_ROOT=str(settings.MEDIA_ROOT))
    answered: list[str] = []
    failed = 0
    stop_at = threading.Event()
    lock = threading.Lock()

    def client(n: int) -> None:
        nonlocal failed
        i = 0
        while not stop_at.is_set():
            agent = f"crash-test/{n}.{i}"
            i += 1
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                connection.request("GET", f"/s/{share.token}", headers={"User-Agent": agent, "Accept": "*/*"})
                response = connection.getresponse()
                body = response.read()
                connection.close()
            except (OSError, http.client.HTTPException):
                with lock:
                    failed += 1  # cut by the kill: not answered
                continue
            if response.status == 200 and body == DATA:
                with lock:
                    answered.append(agent)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    try:
        wait_for_port(port, 30, server)
        assert wait_until(lambda: len(workers_of(server.pid)) == 2, 30)
        for thread in threads:
            thread.start()
        # Counted, not timed: on a loaded machine the first answers can take seconds.
        assert wait_until(lambda: len(answered) >= ANSWERED_BEFORE, 60), "downloads ran before the kill"
        victim = workers_of(server.pid)[0]
        before = len(answered)
        os.kill(victim, signal.SIGKILL)
        # The other worker goes on; the master starts a new one.
        assert wait_until(lambda: len(answered) >= before + ANSWERED_AFTER, 60), "downloads ran after the kill"
    finally:
        stop_at.set()
        for thread in threads:
            if thread.is_alive():
                thread.join(30)
        stop(server)

    recorded = set(
        ShareEvent.objects.filter(share=share, kind=ShareEvent.Kind.DOWNLOADED).values_list("user_agent", flat=True)
    )
    lost = [agent for agent in answered if agent not in recorded]
    report(
        capsys,
        f"a worker killed mid-stream ({'unlimited' if limit is None else 'limited'} link)",
        answered=len(answered),
        answered_before_the_kill=before,
        cut=failed,
        recorded=len(recorded),
        lost=len(lost),
    )
    assert lost == []
    share.refresh_from_db()
    assert share.total_downloads == len(recorded) >= len(answered)  # the count and the history agree
