"""Sliding-window rate limits on shared atomic counters.

A window of W seconds is counted in buckets of W/10 seconds, and a hit is
allowed when the buckets covering the last W seconds (eleven of them, so
never less than W) hold at most `limit` hits, its own included. Counting
comes first and deciding second: a hit increments its bucket atomically,
then reads the total, and a refused hit is taken back. Of many hits at
once, each sees every hit counted before it, so no more than `limit` are
ever allowed within W seconds, whatever the number of workers or nodes
(see ratelimit.counters for the atomic part). A limit with `ahead` > 1
counts several hits of a client at once and allows them from this
process's allowance (ratelimit.ahead), under the same promise.
"""

import functools
import hashlib
import ipaddress
import math
import time
from dataclasses import dataclass

from django.conf import settings

from ratelimit.counters import CountersUnavailable, reachable, shared_counters

BUCKETS = 10

__all__ = ["BUCKETS", "CountersUnavailable", "Decision", "RateLimit", "client_address"]


@dataclass(frozen=True)
class Decision:
    allowed: bool
    retry_after: int  # seconds until a hit could be allowed; 0 when allowed
    remaining: int  # hits left in the window after this one


class RateLimit:
    """`ahead`: how many hits of a client one increment may count ahead for
    this process to allow by itself (ratelimit.ahead); 1 counts each hit as
    it comes, as limits guarding secrets must (a refund undoes one hit)."""

    def __init__(self, scope: str, *, limit: int, window: float, ahead: int = 1):
        if limit < 1 or window <= 0 or ahead < 1:
            raise ValueError(f"{scope}: limit, window and ahead must be positive")
        self.scope = scope
        self.limit = limit
        self.window = window
        self.ahead = ahead
        self.bucket = window / BUCKETS
        # A bucket is incremented for `bucket` seconds and read for `window`
        # more: it must outlive both.
        self.ttl = math.ceil(window + 2 * self.bucket)

    def _keys(self, ident: str, now: float) -> tuple[str, list[str], int]:
        """The current bucket's key, the earlier buckets' keys still in the window, and the bucket's number."""
        key, current = self._current_key(ident, now)
        return key, _earlier_keys(key, current), current

    def _current_key(self, ident: str, now: float) -> tuple[str, int]:
        digest = hashlib.sha256(ident.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        current = int(now // self.bucket)
        return f"rl:{self.scope}:{digest}:{current}", current

    @reachable
    def hit(self, ident: str) -> Decision:
        """Count one hit of `ident`; allowed only if the window has room."""
        counters = shared_counters()
        now = time.time()
        key, current = self._current_key(ident, now)
        allowed = self._allowed_ahead(counters, current, key)
        if allowed is not None:
            return allowed
        older = _earlier_keys(key, current)
        amount = 1
        if self.ahead > 1:
            amount = counters.ahead.size(self.scope, current, key, limit=self.limit, most=self.ahead)
        mine = counters.incr(key, self.ttl, amount)
        earlier = counters.values(older)
        total = mine + sum(earlier.values())
        # Of the hits just counted, those the window holds are allowed: this
        # one now, the rest later from the allowance; the others are taken back.
        fits = min(amount, self.limit - (total - amount))
        if fits < amount:
            counters.decr(key, amount - max(0, fits))
        if fits >= 1:
            total -= amount - fits
            if self.ahead > 1:
                counters.ahead.keep(self.scope, current, key, unused=fits - 1, total=total)
            return Decision(True, 0, self.limit - total)
        # Refused, unless another thread kept an allowance meanwhile.
        return self._allowed_ahead(counters, current, key) or Decision(
            False, self._retry_after(earlier, current, now), 0
        )

    def _allowed_ahead(self, counters, current: int, key: str) -> Decision | None:
        """A hit allowed from this process's allowance on `key`, or None."""
        if self.ahead == 1:
            return None
        total = counters.ahead.use(self.scope, current, key)
        return None if total is None else Decision(True, 0, max(0, self.limit - total))

    @reachable
    def refund(self, ident: str) -> None:
        """Take back one hit of `ident` (e.g. an attempt that succeeded).

        One hit, from the latest bucket that holds any: the hit being taken
        back may have been counted a bucket or more ago, and a bucket that
        reaches zero must not send the refund on to an earlier one as well.
        """
        key, older, _ = self._keys(ident, time.time())
        counters = shared_counters()
        for candidate in (key, *reversed(older)):
            if counters.take_back(candidate):
                return

    @reachable
    def check(self, ident: str) -> Decision:
        """Whether a hit would be allowed now, without counting one."""
        now = time.time()
        key, older, current = self._keys(ident, now)
        counts = shared_counters().values([*older, key])
        total = sum(counts.values())
        if total < self.limit:
            return Decision(True, 0, self.limit - total - 1)
        return Decision(False, self._retry_after(counts, current, now), 0)

    def _retry_after(self, counts: dict[str, int], current: int, now: float) -> int:
        """Seconds until the oldest counted bucket leaves the window."""
        buckets = sorted(int(key.rsplit(":", 1)[1]) for key, n in counts.items() if n > 0)
        oldest = buckets[0] if buckets else current
        return max(1, math.ceil((oldest + BUCKETS + 1) * self.bucket - now))


def _earlier_keys(key: str, current: int) -> list[str]:
    """The keys of the buckets before `key`'s (bucket `current`) still in the window."""
    prefix = key.rpartition(":")[0]
    return [f"{prefix}:{b}" for b in range(current - BUCKETS, current)]


def client_ip(request) -> str:
    """The client's own address, as sent: REMOTE_ADDR, or behind NUM_PROXIES
    trusted proxies that many entries from the end of X-Forwarded-For."""
    address = request.META.get("REMOTE_ADDR", "")
    proxies = settings.NUM_PROXIES
    if proxies:
        forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
        if len(forwarded) >= proxies:
            address = forwarded[-proxies]
    return address


def client_address(request) -> str:
    """The client's address as the limits see it.

    Behind NUM_PROXIES trusted proxies the client is that many entries from
    the end of X-Forwarded-For (anything before them can be forged); IPv6
    clients are grouped by /64, the block one subscriber usually holds.
    """
    return _subscriber(client_ip(request))


@functools.lru_cache(maxsize=4096)  # every public-link request asks; parsing is most of it
def _subscriber(address: str) -> str:
    """The address a limit counts for the client at `address` (client_address)."""
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address[:64]
    if parsed.version == 4:
        return str(parsed)
    if parsed.ipv4_mapped is not None:  # ::ffff:192.0.2.1 is that IPv4 client
        return str(parsed.ipv4_mapped)
    return str(ipaddress.ip_network(f"{parsed}/64", strict=False))
