"""A local webhook receiver for tests: an http.server in a thread that
records every request and answers as told."""

import http.server
import json
import threading
from dataclasses import dataclass, field


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    path: str

    @property
    def json(self) -> dict:
        return json.loads(self.body)


@dataclass
class Receiver:
    """`answer(n)` gives the status of the n-th request (1-based); `hold`,
    while set... cleared, makes requests wait (a receiver slow to answer)."""

    answer: object = lambda n: 204
    extra_headers: object = lambda n: {}  # more headers of the n-th answer (e.g. Retry-After)
    received: list[Received] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    holding: threading.Event = field(default_factory=threading.Event)
    hold: bool = False

    def __post_init__(self):
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with lock:
                    receiver.received.append(Received({k.lower(): v for k, v in self.headers.items()}, body, self.path))
                    count = len(receiver.received)
                if receiver.hold:
                    receiver.holding.set()
                    receiver.release.wait(30)
                status = receiver.answer(count)
                self.send_response(status)
                for name, value in receiver.extra_headers(count).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        lock = threading.Lock()
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def ids(self) -> list[str]:
        return [request.headers["webhook-id"] for request in self.received]

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
