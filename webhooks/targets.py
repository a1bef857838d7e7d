"""Where a webhook may be sent: no loopback, private, link-local, multicast
or reserved address (SSRF), unless WEBHOOK_ALLOW_PRIVATE_TARGETS.

The host is checked when an endpoint is registered and again before every
send, on the addresses it resolves to then; the send connects to the address
that was checked (PinnedHTTPConnection), so a DNS answer that changes between
the check and the connection (rebinding) cannot slip a private target in.
"""

import contextlib
import http.client
import ipaddress
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings


class TargetRefused(ValueError):
    pass


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str
    port: int
    path: str  # with the query
    address: str  # the checked IP address to connect to


# IPv6 prefixes that carry an IPv4 address inside (IPv4-compatible,
# IPv4-translated, NAT64 well-known and local-use, 6to4, Teredo): a router or
# translator on the way may deliver them to that IPv4 address, which can be
# private while ipaddress calls the IPv6 one global. Refused outright.
EMBEDS_IPV4 = tuple(
    ipaddress.ip_network(prefix)
    for prefix in ("::/96", "::ffff:0:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48", "2002::/16", "2001::/32")
)


def is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.version == 6 and any(ip in prefix for prefix in EMBEDS_IPV4):
        return False
    return ip.is_global and not ip.is_multicast


def parse(url: str) -> tuple[str, str, int, str]:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise TargetRefused("The URL must start with http:// or https://.")
    if not parts.hostname:
        raise TargetRefused("The URL has no host.")
    if parts.username or parts.password:
        raise TargetRefused("The URL must not contain credentials.")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise TargetRefused("The URL's port is not valid.") from None
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.scheme, parts.hostname, port, path


def resolve(url: str) -> Target:
    """Resolve `url`'s host; raise TargetRefused if it cannot be, or if any of
    its addresses is not public (unless the setting allows private ones)."""
    scheme, host, port, path = parse(url)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise TargetRefused(f"The host {host!r} cannot be resolved.") from None
    addresses = [info[4][0] for info in infos]
    if not addresses:
        raise TargetRefused(f"The host {host!r} cannot be resolved.")
    if not settings.WEBHOOK_ALLOW_PRIVATE_TARGETS:
        private = [address for address in addresses if not is_public(address)]
        if private:
            raise TargetRefused(
                f"The host {host!r} resolves to {private[0]}, a loopback, private, link-local, multicast or "
                "reserved address; webhooks are sent only to public addresses."
            )
    return Target(scheme, host, port, path, addresses[0])


class PinnedHTTPConnection(http.client.HTTPConnection):
    """Connects to `address`, sends Host: for the URL's host."""

    def __init__(self, host, port, address, **kwargs):
        super().__init__(host, port, **kwargs)
        self.address = address

    def connect(self):
        self.sock = socket.create_connection((self.address, self.port), self.timeout)


class PinnedHTTPSConnection(http.client.HTTPSConnection):
    """Connects to `address`; TLS verifies the certificate for the URL's host."""

    def __init__(self, host, port, address, **kwargs):
        super().__init__(host, port, context=ssl.create_default_context(), **kwargs)
        self.address = address

    def connect(self):
        sock = socket.create_connection((self.address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


@dataclass(frozen=True)
class Answer:
    status: int
    retry_after: str | None  # the Retry-After header, as sent


class DeadlinePassed(TimeoutError):
    """The whole exchange took longer than its deadline."""


def _cut(connection: http.client.HTTPConnection) -> None:
    """Wake a send or read blocked on the connection (the watchdog's end)."""
    sock = connection.sock
    if sock is not None:
        with contextlib.suppress(OSError):  # already closed
            sock.shutdown(socket.SHUT_RDWR)


def post(target: Target, body: bytes, headers: dict[str, str], timeout: float) -> Answer:
    """POST `body` to `target`; return its answer (no redirects followed).

    `timeout` bounds the whole exchange, not each socket operation: a
    receiver that drips a byte a second would otherwise keep the sender for
    as long as it likes. A watchdog cuts the connection at the deadline.
    Raises OSError / http.client.HTTPException on a network failure or when
    the deadline passes (DeadlinePassed)."""
    deadline = time.monotonic() + timeout
    kind = PinnedHTTPSConnection if target.scheme == "https" else PinnedHTTPConnection
    connection = kind(target.host, target.port, target.address, timeout=timeout)
    watchdog = threading.Timer(timeout, _cut, args=(connection,))
    watchdog.daemon = True
    watchdog.start()
    try:
        connection.request("POST", target.path, body=body, headers=headers)
        response = connection.getresponse()
        response.read(64 * 1024)  # a little of the answer, never all of an endless one
        if time.monotonic() >= deadline:
            raise DeadlinePassed(f"timed out: no whole answer within {timeout:g} s")
        return Answer(response.status, response.getheader("Retry-After"))
    except (OSError, http.client.HTTPException):
        if time.monotonic() >= deadline:  # what the watchdog's cut left half read
            raise DeadlinePassed(f"timed out: no whole answer within {timeout:g} s") from None
        raise
    finally:
        watchdog.cancel()
        connection.close()
