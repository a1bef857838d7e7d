"""Where a webhook may be sent: no address that IANA's special-purpose
registries (or multicast) set apart, such as loopback, private, link-local
or documentation ones (SSRF), unless WEBHOOK_ALLOW_PRIVATE_TARGETS.

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
from collections.abc import Callable
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


# What may not be a webhook's target, after IANA's special-purpose address
# registries (IPv4 and IPv6), plus multicast and the deprecated site-local
# block, each with why; the AS112 and AMT blocks, which the registry calls
# globally reachable, are anycast services, never a receiver. Python's
# ipaddress `is_global` is asked too, for anything this table does not
# name; on Python 3.11 it calls global, among those below, 192.0.0.0/24
# beyond its first eight addresses, 192.88.99.0/24, multicast, fec0::/10,
# 2002::/16, 3fff::/20, 5f00::/16, 64:ff9b:1::/48, 100:0:0:1::/64 and NAT64
# addresses of private IPv4 ones. The most specific block an address is in
# decides. A block with `carries` is judged by the IPv4 addresses inside
# the IPv6 one instead: a translator or relay on the way delivers there.
@dataclass(frozen=True)
class Block:
    network: ipaddress.IPv4Network | ipaddress.IPv6Network
    reason: str
    carries: Callable[[ipaddress.IPv6Address], tuple[ipaddress.IPv4Address, ...]] | None = None


def _last_32_bits(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, ...]:
    return (ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF),)


def _sixtofour(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, ...]:
    return (ip.sixtofour,)


def _teredo(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, ...]:
    return ip.teredo  # (its server, its client)


BLOCKS = tuple(
    Block(ipaddress.ip_network(network), reason, carries)
    for network, reason, carries in (
        ("0.0.0.0/8", "this network (0.0.0.0/8)", None),
        ("10.0.0.0/8", "a private address (10.0.0.0/8)", None),
        ("100.64.0.0/10", "a carrier-grade NAT address (100.64.0.0/10)", None),
        ("127.0.0.0/8", "a loopback address (127.0.0.0/8)", None),
        ("169.254.0.0/16", "a link-local address (169.254.0.0/16)", None),
        ("172.16.0.0/12", "a private address (172.16.0.0/12)", None),
        ("192.0.0.0/24", "an IETF protocol assignment (192.0.0.0/24)", None),
        ("192.0.2.0/24", "a documentation address (192.0.2.0/24)", None),
        ("192.31.196.0/24", "an AS112 DNS sink (192.31.196.0/24)", None),
        ("192.52.193.0/24", "an AMT relay anycast address (192.52.193.0/24)", None),
        ("192.88.99.0/24", "the deprecated 6to4 relay anycast (192.88.99.0/24)", None),
        ("192.168.0.0/16", "a private address (192.168.0.0/16)", None),
        ("192.175.48.0/24", "an AS112 DNS sink (192.175.48.0/24)", None),
        ("198.18.0.0/15", "a benchmarking address (198.18.0.0/15)", None),
        ("198.51.100.0/24", "a documentation address (198.51.100.0/24)", None),
        ("203.0.113.0/24", "a documentation address (203.0.113.0/24)", None),
        ("224.0.0.0/4", "a multicast address (224.0.0.0/4)", None),
        ("240.0.0.0/4", "a reserved address (240.0.0.0/4)", None),
        ("255.255.255.255/32", "the broadcast address", None),
        ("::/128", "the unspecified address (::)", None),
        ("::1/128", "the loopback address (::1)", None),
        ("::/96", "a deprecated IPv4-compatible address (::/96)", None),
        ("::ffff:0:0/96", "an IPv4-mapped address (::ffff:0:0/96)", _last_32_bits),
        ("::ffff:0:0:0/96", "an IPv4-translated address (::ffff:0:0:0/96)", None),
        ("64:ff9b::/96", "a NAT64 address (64:ff9b::/96)", _last_32_bits),
        ("64:ff9b:1::/48", "a local-use NAT64 address (64:ff9b:1::/48)", None),
        ("100::/64", "a discard-only address (100::/64)", None),
        ("100:0:0:1::/64", "a dummy address (100:0:0:1::/64)", None),
        ("2001::/23", "an IETF protocol assignment (2001::/23)", None),
        ("2001::/32", "a Teredo address (2001::/32)", _teredo),
        ("2001:db8::/32", "a documentation address (2001:db8::/32)", None),
        ("2002::/16", "a 6to4 address (2002::/16)", _sixtofour),
        ("3fff::/20", "a documentation address (3fff::/20)", None),
        ("5f00::/16", "a segment-routing identifier (5f00::/16)", None),
        ("fc00::/7", "a unique local address (fc00::/7)", None),
        ("fe80::/10", "a link-local address (fe80::/10)", None),
        ("fec0::/10", "a deprecated site-local address (fec0::/10)", None),
        ("ff00::/8", "a multicast address (ff00::/8)", None),
    )
)


def refusal(address: str) -> str | None:
    """Why `address` may not be a webhook's target, or None if it may."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone
    inside = [block for block in BLOCKS if block.network.version == ip.version and ip in block.network]
    if inside:
        block = max(inside, key=lambda block: block.network.prefixlen)
        if block.carries is None:
            return block.reason
        for carried in block.carries(ip):
            why = refusal(str(carried))
            if why is not None:
                return f"{block.reason} carrying {why}"
        return None
    if not ip.is_global:
        return "not a globally reachable address"
    return None


def is_public(address: str) -> bool:
    return refusal(address) is None


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
        reasons = [why for why in map(refusal, addresses) if why is not None]
        if reasons:
            raise TargetRefused(refused_message(host, reasons[0]))
    return Target(scheme, host, port, path, addresses[0])


def refused_message(host: str, reason: str) -> str:
    """The refusal of a target on a special-purpose address. Its reason is
    named only for an address written in the URL: what a name resolves to
    is the network's business, not something any user may map by trying
    names (an internal host's address, which names are internal)."""
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return (
            f"The host {host!r} does not resolve only to public addresses; webhooks are sent only to public addresses."
        )
    return f"The address {host} is {reason}; webhooks are sent only to public addresses."


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
