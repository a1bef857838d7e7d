"""Receivers that misbehave on purpose, over real sockets: one that drips its
answer a byte a second, one that never answers. A delivery's timeout bounds
the whole exchange, and one owner's slow receiver does not hold up another
owner's deliveries."""

import socket
import threading
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from sharing.models import Share
from tests.helpers import wait_until
from tests.webhook_receiver import Receiver
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.targets import DeadlinePassed, Target, post
from webhooks.worker import WebhookThread


class Misbehaving:
    """A TCP server whose every connection reads the request, then `drip`s
    an answer a byte a second (or, with drip=False, says nothing at all)."""

    def __init__(self, drip: bool):
        self.drip = drip
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.closed = threading.Event()
        self.connections = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn) -> None:
        try:
            conn.recv(65536)
            if self.drip:
                for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n":
                    if self.closed.wait(1):
                        return
                    conn.sendall(bytes([byte]))
            else:
                self.closed.wait(60)
        except OSError:
            pass

    def close(self) -> None:
        self.closed.set()
        self.listener.close()
        for conn in self.connections:
            conn.close()


@pytest.fixture
def dripper():
    server = Misbehaving(drip=True)
    yield server
    server.close()


@pytest.fixture
def hanger():
    server = Misbehaving(drip=False)
    yield server
    server.close()


@pytest.mark.parametrize("server", ["dripper", "hanger"])
def test_the_timeout_bounds_the_whole_exchange(request, server):
    target = Target("http", "127.0.0.1", request.getfixturevalue(server).port, "/hook", "127.0.0.1")
    started = time.monotonic()
    with pytest.raises(DeadlinePassed):
        post(target, b"{}", {"Content-Type": "application/json"}, timeout=1.5)
    # Not a timed assertion of speed: the dripper's answer alone takes 38 s.
    assert time.monotonic() - started < 10


@pytest.mark.django_db(transaction=True)
def test_a_dripping_and_a_hanging_receiver_do_not_delay_another_owners_delivery(
    alice, bob, make_file, dripper, hanger, settings
):
    settings.WEBHOOK_TIMEOUT = 10
    good = Receiver()
    thread = WebhookThread(poll_interval=0.05)
    thread.start()
    try:
        for url in (dripper.url, hanger.url):
            WebhookEndpoint.objects.create(owner=bob, url=url, events=["created"])
        bobs_file = make_file(bob)
        for _ in range(3):  # a backlog for each of bob's receivers
            Share.create_for(file=bobs_file, expires_at=timezone.now() + timedelta(hours=1))
        assert wait_until(lambda: len(dripper.connections) == 1 and len(hanger.connections) == 1, 5)

        WebhookEndpoint.objects.create(owner=alice, url=good.url, events=["created"])
        share = Share.create_for(file=make_file(alice), expires_at=timezone.now() + timedelta(hours=1))
        # The receiver answers before the worker records the delivery: wait for the record.
        delivered = WebhookDelivery.objects.filter(share_id=share.pk, delivered_at__isnull=False)
        assert wait_until(delivered.exists, 5)
        assert len(good.received) == 1
        delivery = delivered.get()
        delay = (delivery.delivered_at - delivery.event.at).total_seconds()
        # Beside the two stuck sends, not after them: they hold their senders for the whole
        # 10 s timeout, so a delivery queued behind them would take at least that long.
        assert delay < settings.WEBHOOK_TIMEOUT / 2, delay
        # Each of bob's endpoints holds one sender, never more.
        assert len(dripper.connections) == 1
        assert len(hanger.connections) == 1
    finally:
        thread.stop()
        dripper.close()
        hanger.close()
        thread.join(15)
        good.close()
    assert not thread.is_alive()
