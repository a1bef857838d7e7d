"""What a broken response really delivered (links.delivery), on real TCP
connections over loopback: the server's socket buffer holds megabytes the
client never got, and a reset connection gives them back to the budget; but
nothing the server sent is given back, acknowledged or not."""

import io
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import time

import pytest

from links.delivery import Delivery
from links.downloads import RangeReader
from tests.helpers import REPO_ROOT

pytestmark = pytest.mark.skipif(not hasattr(socket, "TCP_INFO"), reason="tcp_info is Linux's")


@pytest.fixture
def connection():
    """(server side, client side) of one loopback TCP connection."""
    listener = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(listener.getsockname())
    server, _ = listener.accept()
    listener.close()
    yield server, client
    server.close()
    client.close()


def fill(sock) -> int:
    """Write until the kernel takes no more; return the bytes written."""
    sock.setblocking(False)
    written = 0
    try:
        while True:
            written += sock.send(b"x" * 262144)
    except BlockingIOError:
        return written


def read(sock, n: int) -> None:
    got = 0
    while got < n:
        got += len(sock.recv(n - got))


def reset(sock) -> None:
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def wait_for_reset(delivery: Delivery) -> int:
    deadline = time.monotonic() + 5
    while (received := delivery.received_at_most()) is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert received is not None, "the reset was never seen"
    return received


def test_a_reset_connection_tells_what_was_sent(connection):
    server, client = connection
    server.sendall(b"an earlier response on the same connection")
    read(client, 42)
    delivery = Delivery(server)  # this response begins here
    written = fill(server)
    read(client, 65536)
    assert delivery.received_at_most() is None  # still open: it may deliver more
    reset(client)
    received = wait_for_reset(delivery)
    assert 65536 <= received < written
    assert written - received > 1024 * 1024  # megabytes never left the server


def test_a_broken_response_reports_what_was_delivered_not_what_was_read(connection):
    server, client = connection
    size = 64 * 1024 * 1024
    reported = []
    reader = RangeReader(io.BytesIO(bytes(size)), 0, size, on_close=reported.append, delivery=Delivery(server))
    server.setblocking(False)
    try:
        while chunk := reader.read(262144):
            view = memoryview(chunk)
            while view:
                view = view[server.send(view) :]
    except BlockingIOError:
        pass  # the client stopped reading
    read(client, 65536)
    reset(client)
    wait_for_reset(reader.delivery)
    reader.close()
    assert 65536 <= reported[0] < reader.position


def test_without_a_socket_the_bytes_read_count():
    reported = []
    reader = RangeReader(io.BytesIO(b"abcdef"), 1, 6, on_close=reported.append, delivery=Delivery(None))
    assert reader.read(2) == b"bc"
    reader.close()
    assert reported == [3]


def test_a_finished_response_counts_all_it_read(connection):
    server, client = connection
    reported = []
    reader = RangeReader(io.BytesIO(b"abcdef"), 0, 6, on_close=reported.append, delivery=Delivery(server))
    server.sendall(reader.read())
    reset(client)
    time.sleep(0.05)
    reader.close()
    assert reported == [6]  # complete: whatever the connection says afterwards


def send_until_dropped(sock) -> tuple[int, OSError]:
    """Write until the connection fails; return the bytes written and why."""
    written = 0
    try:
        while True:
            written += sock.send(b"x" * 65536)
    except OSError as error:
        return written, error


def test_a_client_that_stops_acknowledging_is_dropped_after_the_hold(connection):
    server, _ = connection  # the client never reads
    delivery = Delivery(server)
    delivery.hold_to(1)  # one second without an acknowledged byte
    server.settimeout(30)  # a failure to drop it fails the test instead of hanging
    written, error = send_until_dropped(server)
    assert error.errno == 110  # ETIMEDOUT from the kernel, not the 30 s socket timeout
    received = delivery.received_at_most()
    assert received is not None  # dropped: nothing more can be delivered
    assert received < written


def test_what_a_client_received_without_acknowledging_is_not_given_back():
    """A client that reads every segment, acknowledges none and resets
    (tests.silent_tcp, in a network namespace of its own) got bytes: they
    count as sent, though the kernel never heard they arrived."""
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or unshare is None or not os.path.exists("/dev/net/tun"):
        pytest.skip("needs root, unshare and /dev/net/tun (a network namespace with a TUN device)")
    run = subprocess.run(
        [unshare, "--net", sys.executable, "-m", "tests.silent_tcp"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if run.returncode != 0 and "unshare failed" in run.stderr:
        pytest.skip(f"no network namespace here: {run.stderr.strip()}")
    assert run.returncode == 0, run.stderr
    figures = json.loads(run.stdout)
    assert figures["received"] > 0  # the server did send, within its window
    assert figures["counted"] is not None  # the reset was seen
    assert figures["counted"] >= figures["received"]
    assert figures["counted"] < figures["taken"]  # what never left is still given back
