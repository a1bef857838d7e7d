"""Hits counted ahead: a process counts several hits of one client in the
shared counters at once, then allows them by itself.

Every public-link request counted one hit in the shared counters: a write
transaction in the SQLite file, or two round trips to Redis, per request,
about a seventh of a hot link's CPU (docs/benchmarks.md, "Hot link"). A limit built
with `ahead` > 1 counts up to that many hits of a client in one increment
and keeps what it did not use yet as this process's allowance on them.

The limit's promise holds: a hit is allowed only once it is counted, and an
allowance is kept only as far as the window, with it, holds at most `limit`
(the rest is taken back at once), so no more than `limit` hits are allowed
within the window, whatever the number of processes. What a process
counted ahead and has not used (its client went quiet, or its next
requests went to another worker) still counts against the client until its
bucket leaves the window: a client spread over several workers may be
refused a little before its limit, never after it. A count ahead is at most
1/SPREAD of what the window has left as this process last saw it, so near
the limit each hit is counted by itself, as without counting ahead. An
allowance lasts as long as the bucket it was counted in.
"""

import threading
from dataclasses import dataclass

# A count ahead takes at most this fraction of what the window had left.
SPREAD = 8


@dataclass
class _Allowance:
    left: int  # counted hits not yet allowed
    total: int  # the window's count when this process last counted ahead


class CountedAhead:
    """One process's allowances of the hits it counted ahead, per limit and bucket."""

    def __init__(self):
        self._lock = threading.Lock()  # guards this process's bookkeeping only
        self._buckets: dict[str, int] = {}
        self._allowances: dict[str, dict[str, _Allowance]] = {}

    def use(self, scope: str, bucket: int, key: str) -> int | None:
        """Allow one hit from the allowance on `key`: the window's count as
        last counted, or None when there is no hit left to use."""
        with self._lock:
            allowance = self._current(scope, bucket).get(key)
            if allowance is None or allowance.left == 0:
                return None
            allowance.left -= 1
            return allowance.total

    def size(self, scope: str, bucket: int, key: str, *, limit: int, most: int) -> int:
        """How many hits to count at the next increment of `key`: one while
        this process has not seen the window's count, then at most 1/SPREAD
        of what it had left."""
        with self._lock:
            allowance = self._current(scope, bucket).get(key)
        if allowance is None:
            return 1
        return max(1, min(most, (limit - allowance.total) // SPREAD))

    def keep(self, scope: str, bucket: int, key: str, *, unused: int, total: int) -> None:
        """Remember `unused` counted hits of `key`, and the window's count `total`."""
        with self._lock:
            allowances = self._current(scope, bucket)
            allowance = allowances.get(key)
            if allowance is None:
                allowances[key] = _Allowance(unused, total)
            else:
                allowance.left += unused
                allowance.total = max(allowance.total, total)

    def _current(self, scope: str, bucket: int) -> dict[str, _Allowance]:
        """The allowances of `scope`'s current bucket; those of an earlier bucket are dropped."""
        latest = self._buckets.get(scope)
        if latest is not None and bucket < latest:
            return {}  # a thread still in the bucket before: no allowance for it
        if latest != bucket:
            self._buckets[scope] = bucket
            self._allowances[scope] = {}
        return self._allowances[scope]
