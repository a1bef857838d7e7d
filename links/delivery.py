"""How many bytes of a response really reached the client, when a connection
breaks.

A response that broke off read more of the file than the client got: what
sat in the server's socket buffer (up to the kernel's tcp_wmem, 4 MiB by
default) never left the machine and is thrown away when the client resets
the connection. Linux counts the bytes it put on the wire (tcp_info's
tcpi_bytes_sent, less tcpi_bytes_retrans: each byte once, however often it
was sent again); once the connection is reset (TCP_CLOSE) nothing more can
leave, so what was sent since the response began is the most the client can
have received. Only then is it trusted: a connection still open may yet
deliver what it holds, and counting all of it is the safe direction for a
byte budget.

Sent, not acknowledged (tcpi_bytes_acked): a client with a TCP stack of its
own can read what arrives and never acknowledge it, then reset; counting
acknowledgements gave it back up to a socket buffer per response, for
nothing. What was sent and not acknowledged is at most what the congestion
window let out, and without acknowledgements that window does not grow; an
honest client loses only that much of the refund (its in-flight bytes),
which the resend allowance covers when it asks for them again. A kernel
without these counts (before Linux 4.19) refunds nothing.

A connection whose client vanished without a reset (a network cut, a
laptop closed) would keep its response's bytes reserved while the kernel
retries, about 15 minutes; hold_to(seconds) sets TCP_USER_TIMEOUT so the
kernel drops it once nothing has been acknowledged for that long (a client
that stopped reading included), and the response settles with what was
acknowledged.

The socket is gunicorn's (environ["gunicorn.socket"]); elsewhere (the
development server, another platform) nothing is measured and the bytes
read from the file count.
"""

import contextlib
import socket
import struct

# struct tcp_info (linux/tcp.h): tcpi_state is its first byte,
# tcpi_bytes_sent and tcpi_bytes_retrans the u64s at offsets 200 and 208
# (there since Linux 4.19).
_STATE_OFFSET = 0
_BYTES_SENT_OFFSET = 200
_BYTES_RETRANS_OFFSET = 208
_TCP_INFO_BYTES = 216
TCP_CLOSE = 7


def _tcp_info(sock) -> tuple[int, int] | None:
    """(state, bytes put on the wire, each once) of `sock`, or None when it cannot tell."""
    try:
        raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_BYTES)
    except (AttributeError, OSError):
        return None
    if len(raw) < _TCP_INFO_BYTES:
        return None  # a kernel older than the fields
    sent = struct.unpack_from("Q", raw, _BYTES_SENT_OFFSET)[0] - struct.unpack_from("Q", raw, _BYTES_RETRANS_OFFSET)[0]
    return raw[_STATE_OFFSET], sent


class Delivery:
    """What a client's connection was sent since this response began."""

    def __init__(self, sock):
        self.sock = sock
        start = _tcp_info(sock) if sock is not None else None
        self.sent_at_start = None if start is None else start[1]

    @classmethod
    def of(cls, request) -> "Delivery":
        return cls(request.META.get("gunicorn.socket"))

    def hold_to(self, seconds: int) -> None:
        """Drop the connection once the client has acknowledged nothing for `seconds`."""
        if self.sent_at_start is None or not hasattr(socket, "TCP_USER_TIMEOUT"):
            return
        # A connection already gone raises: its close settles it anyway.
        with contextlib.suppress(OSError):
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, seconds * 1000)

    def received_at_most(self) -> int | None:
        """Bytes the client can have received of this response (headers
        included), if the connection was reset; None while it could still
        deliver more, or when nothing can be measured."""
        if self.sent_at_start is None:
            return None
        now = _tcp_info(self.sock)
        if now is None or now[0] != TCP_CLOSE:
            return None
        return max(0, now[1] - self.sent_at_start)
