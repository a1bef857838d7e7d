"""clamd's protocol, the few commands the worker needs: PING and INSTREAM.

INSTREAM takes the bytes as chunks, each prefixed with its length as four
bytes in network order, ended by a zero length; clamd then answers one
line: "stream: OK", "stream: <signature> FOUND", or an error ("INSTREAM
size limit exceeded. ERROR" once more than its StreamMaxLength came). The
commands are sent in the z form (NUL-terminated), so answers end with NUL.
A chunk is read from the file's storage and sent before the next is read:
the worker holds one chunk, whatever the file's size.

Written here rather than taken from PyPI: the maintained clients read a
whole file object in their own loop and fold "clamd is down" and "clamd
refused this stream" into one exception, and the worker must tell them
apart (the first is retried later, the second is the file's verdict).
"""

import socket
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

# Below clamd's smallest sensible StreamMaxLength, and what the worker holds.
CHUNK_BYTES = 1024 * 1024
SIZE_LIMIT = "INSTREAM size limit exceeded"


class ClamdUnavailable(Exception):
    """clamd could not be reached, or broke off before answering: try later."""


class ClamdError(Exception):
    """clamd answered this stream with an error other than its size limit."""


@dataclass(frozen=True)
class Verdict:
    """What clamd said of one stream: clean, infected (its signature), or
    over its StreamMaxLength (`too_big`)."""

    signature: str = ""
    too_big: bool = False

    @property
    def infected(self) -> bool:
        return bool(self.signature)


def parse_answer(line: str) -> Verdict:
    """clamd's answer to INSTREAM as a Verdict; ClamdError for anything else."""
    text = line.strip("\0\n ")
    if text.startswith(SIZE_LIMIT):
        return Verdict(too_big=True)
    if text == "stream: OK":
        return Verdict()
    if text.startswith("stream: ") and text.endswith(" FOUND"):
        return Verdict(signature=text[len("stream: ") : -len(" FOUND")])
    raise ClamdError(f"clamd answered {text[:200]!r}")


class Clamd:
    """A client of the clamd at `url` (tcp://host:port or unix:///path);
    each command is one connection, `timeout` seconds for every step."""

    def __init__(self, url: str, timeout: float):
        parts = urlsplit(url)
        if parts.scheme == "unix":
            self.family, self.address = socket.AF_UNIX, parts.path
        elif parts.scheme == "tcp" and parts.hostname and parts.port:
            self.family, self.address = (
                socket.AF_INET6 if ":" in parts.hostname else socket.AF_INET,
                (
                    parts.hostname,
                    parts.port,
                ),
            )
        else:
            raise ValueError(f"not a clamd address (tcp://host:port or unix:///path): {url!r}")
        self.url, self.timeout = url, timeout

    def _connect(self) -> socket.socket:
        connection = socket.socket(self.family, socket.SOCK_STREAM)
        connection.settimeout(self.timeout)
        try:
            connection.connect(self.address)
        except OSError as error:
            connection.close()
            raise ClamdUnavailable(f"cannot reach clamd at {self.url}: {error}") from error
        return connection

    def ping(self) -> bool:
        """Whether clamd answers PONG."""
        try:
            with self._connect() as connection:
                connection.sendall(b"zPING\0")
                return _answer(connection) == "PONG"
        except (ClamdUnavailable, OSError):
            return False

    def instream(self, chunks: Iterable[bytes]) -> Verdict:
        """Scan the bytes `chunks` yields (each at most CHUNK_BYTES).

        ClamdUnavailable when clamd is out of reach or goes away mid-stream;
        an exception raised by `chunks` (the storage) passes through."""
        with self._connect() as connection:
            try:
                connection.sendall(b"zINSTREAM\0")
                for chunk in chunks:
                    if chunk:
                        connection.sendall(struct.pack("!L", len(chunk)) + chunk)
                connection.sendall(struct.pack("!L", 0))
            except (BrokenPipeError, ConnectionResetError) as error:
                # clamd stops reading once a stream passes its StreamMaxLength
                # and closes after saying so: its answer may still be there.
                try:
                    return parse_answer(_answer(connection))
                except (OSError, ClamdError):
                    raise ClamdUnavailable(f"clamd broke off the stream: {error}") from error
            except OSError as error:
                raise ClamdUnavailable(f"clamd broke off the stream: {error}") from error
            try:
                line = _answer(connection)
            except OSError as error:
                raise ClamdUnavailable(f"clamd did not answer: {error}") from error
        if not line:
            raise ClamdUnavailable("clamd closed the connection without an answer")
        return parse_answer(line)


def _answer(connection: socket.socket) -> str:
    """Read one NUL-terminated answer (or up to the connection's end)."""
    received = bytearray()
    while not received.endswith(b"\0"):
        data = connection.recv(4096)
        if not data:
            break
        received += data
        if len(received) > 65536:
            break
    return received.decode("utf-8", "replace").rstrip("\0")
