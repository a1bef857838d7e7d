"""The shared counters in Redis (REDIS_URL set), through Django's Redis
cache: add() is SET NX and incr() and decr() are INCRBY, each atomic on the
server; a key gets a time to live longer than it is ever incremented for,
so an increment never meets a key that expired under it.

ratelimit.counters imports this module by its path when the default cache
is Redis, so a machine without Redis never loads the Redis client.
"""

import contextlib

from django.core.cache import caches
from redis.exceptions import RedisError

from ratelimit.ahead import CountedAhead


class RedisCounters:
    # What this store raises when it cannot be reached.
    errors = (RedisError, OSError)

    def __init__(self, alias: str = "default"):
        self.cache = caches[alias]
        self.ahead = CountedAhead()

    def incr(self, key: str, ttl: float, amount: int = 1) -> int:
        self.cache.add(key, 0, timeout=ttl)
        return self.cache.incr(key, amount)

    def decr(self, key: str, amount: int = 1) -> None:
        """Undo increments of this process (refused hits)."""
        with contextlib.suppress(ValueError):  # gone meanwhile: nothing to undo
            self.cache.decr(key, amount)

    def take_back(self, key: str) -> bool:
        """Decrement `key` if it is above zero; return whether it was."""
        try:
            left = self.cache.decr(key)
        except ValueError:  # no such bucket
            return False
        if left >= 0:
            return True
        # It was at zero (another refund got there first): restore it. A hit
        # racing this may see one hit fewer for that instant; counts never drift.
        self.cache.incr(key)
        return False

    def values(self, keys: list[str]) -> dict[str, int]:
        return self.cache.get_many(keys)
