"""Receivers that misbehave on purpose, over real sockets: one that drips its
answer a byte a second, one that never answers. A delivery's timeout bounds
the whole exchange, and one owner's slow receiver does not hold up another
owner's deliveries."""

import socket
import threading
import time

import pytest

from webhooks.targets import DeadlinePassed, Target, post


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
