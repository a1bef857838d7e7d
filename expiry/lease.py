"""A lease in the database: one holder at a time, taken over when it lapses.

For daemons that may run on several machines (PostgreSQL with `--lease on`);
on SQLite, where they share one machine, the lease is a lock on a file
instead (expiry/lease_lock.py; expiry.service.lease_for chooses).

The holder renews it every ttl/2 with a conditional UPDATE (owner is me);
a stand-by looks at it about once a second and takes it with a conditional
UPDATE (owner is me, or it has lapsed) once it has lapsed. A holder that
crashed stops renewing, so a stand-by takes over within ttl plus one poll.
A holder that could not renew stops expiring ttl/5 before anyone else could
take its lease, and on release (a clean exit) the lease lapses at once.

The row count decides, never a read: two stand-bys racing for a lapsed lease
cannot both win. The lease only avoids wasted work; correctness does not
depend on it (each expiry is a conditional UPDATE too).
"""

import os
import secrets
import socket
import time
from collections.abc import Callable

from django.db import IntegrityError, connections, transaction
from django.db.models import Q

from expiry.models import Lease
from expiry.store import to_datetime

DEFAULT_TTL = 5.0
# A daemon awake anyway (an idle one looks for rows written without a notice
# every 2 s, expiry.watchers.SAFETY_INTERVAL) renews up to this fraction of the ttl early
# (1 s of the default 5), so its renewals ride on those wake-ups instead of
# waking it on their own.
EARLY_RENEWAL = 0.2


def new_owner_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


class LeaseKeeper:
    """This process's hold on the lease called `name`."""

    # The daemon's wake-up once a waiting thread took the lease: a row has
    # nothing to wait on, so a stand-by finds it lapsed at its next look.
    on_taken = None

    def __init__(
        self,
        name: str = "runexpiry",
        *,
        ttl: float = DEFAULT_TTL,
        owner: str | None = None,
        clock: Callable[[], float] | None = None,
        using: str = "default",
    ):
        self.name = name
        self.ttl = ttl
        self.owner = owner or new_owner_id()
        self.clock = clock or time.time
        self.using = using
        self.held_until = float("-inf")  # our own clock: stop expiring from here
        self.renew_at = float("-inf")

    def __str__(self) -> str:
        return f"lease ttl {self.ttl:g} s"

    @property
    def held(self) -> bool:
        return self.clock() < self.held_until

    def seconds_until_renewal(self) -> float:
        return max(0.0, self.renew_at - self.clock())

    def keep(self, *, early: bool = False) -> bool:
        """Renew the lease when due (with `early`, up to EARLY_RENEWAL of the
        ttl before), or try to take it; return whether we hold it."""
        now = self.clock()
        renew_at = self.renew_at - (self.ttl * EARLY_RENEWAL if early else 0.0)
        if now < renew_at and now < self.held_until:
            return True
        if now >= self.held_until and self._held_by_another(now):
            return False
        if now < self.held_until and self._renew(now):
            return True
        return self._claim(now)

    def release(self) -> None:
        """Let the lease lapse now, if we still hold it."""
        self.held_until = self.renew_at = float("-inf")
        self._rows().filter(owner=self.owner).update(expires_at=to_datetime(self.clock()))

    def holder(self) -> tuple[str, float] | None:
        """The current holder and the moment its lease lapses, if any."""
        row = self._rows().values_list("owner", "expires_at").first()
        return (row[0], row[1].timestamp()) if row else None

    # --- helpers ---------------------------------------------------------------

    def _rows(self):
        return Lease.objects.using(self.using).filter(name=self.name)

    def _held_by_another(self, now: float) -> bool:
        # A stand-by reads first, so polling once a second never writes (on
        # SQLite a write, even of no row, would take the database's write lock).
        current = self.holder()
        return current is not None and current[0] != self.owner and current[1] > now

    def _renew(self, now: float) -> bool:
        """Extend a lease we hold: one conditional UPDATE, its own transaction.

        An idle daemon's main cost: written as SQL, not through the ORM, whose
        query building took ~0.9 ms of the ~1 ms a renewal cost (the UPDATE
        itself ~0.1 ms on SQLite)."""
        connection = connections[self.using]
        table = connection.ops.quote_name(Lease._meta.db_table)
        until = connection.ops.adapt_datetimefield_value(to_datetime(now + self.ttl))
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {table} SET expires_at = %s WHERE name = %s AND owner = %s", [until, self.name, self.owner]
            )
            renewed = cursor.rowcount == 1
        if renewed:
            self._held_from(now)
        return renewed

    def _held_from(self, now: float) -> None:
        # Stop expiring a second (or ttl/5) before anyone else could take the
        # lease; renew halfway, which leaves that much time for retries.
        self.held_until = now + self.ttl - min(1.0, self.ttl / 5)
        self.renew_at = now + self.ttl / 2

    def _claim(self, now: float) -> bool:
        until = to_datetime(now + self.ttl)
        mine_or_lapsed = Q(owner=self.owner) | Q(expires_at__lte=to_datetime(now))
        with transaction.atomic(using=self.using):
            won = self._rows().filter(mine_or_lapsed).update(owner=self.owner, expires_at=until)
            if not won and not self._rows().exists():
                try:
                    with transaction.atomic(using=self.using):
                        Lease.objects.using(self.using).create(name=self.name, owner=self.owner, expires_at=until)
                    won = 1
                except IntegrityError:
                    won = 0  # another daemon created it first
        if won:
            self._held_from(now)
        else:
            self.held_until = self.renew_at = float("-inf")
        return bool(won)
