"""The row lease's idle cost (expiry/lease.py: PostgreSQL with `--lease on`):
renewed every ttl/2 with one conditional UPDATE, on the wake-ups the daemon
makes anyway. SQLite's lease is a lock with nothing to renew
(tests/test_lease_lock.py, tests/test_idle_wakeups.py)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from expiry.lease import DEFAULT_TTL, EARLY_RENEWAL, LeaseKeeper
from expiry.models import Lease
from expiry.watchers import SAFETY_INTERVAL

pytestmark = pytest.mark.django_db(transaction=True)


class Clock:
    def __init__(self, now: float = 1_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_the_holder_renews_halfway_with_one_statement():
    clock = Clock()
    keeper = LeaseKeeper(ttl=6, owner="a", clock=clock)
    assert keeper.keep()
    assert keeper.seconds_until_renewal() == 3.0
    clock.now += 2.9
    with CaptureQueriesContext(connection) as nothing:
        assert keeper.keep()
    assert len(nothing) == 0  # not due: no query at all
    clock.now += 0.2
    with CaptureQueriesContext(connection) as renewal:
        assert keeper.keep()
    assert [q["sql"].split()[0] for q in renewal] == ["UPDATE"]
    assert Lease.objects.get(name="runexpiry").expires_at.timestamp() == pytest.approx(clock.now + 6)


def test_a_holder_whose_lease_was_taken_does_not_renew_it():
    clock = Clock()
    first = LeaseKeeper(ttl=6, owner="a", clock=clock)
    assert first.keep()
    Lease.objects.filter(name="runexpiry").update(owner="b")  # another daemon took it (after a stall)
    clock.now += 3.1
    assert not first.keep()
    assert Lease.objects.get(name="runexpiry").owner == "b"


def test_a_daemon_awake_anyway_renews_up_to_a_fifth_of_the_ttl_early():
    """So renewals ride on the idle daemon's wake-ups (every SAFETY_INTERVAL)."""
    clock = Clock()
    keeper = LeaseKeeper(ttl=5, owner="a", clock=clock)
    assert keeper.keep()
    clock.now += 1.4  # renewal due at 2.5; early from 1.5
    with CaptureQueriesContext(connection) as nothing:
        assert keeper.keep(early=True)
    assert len(nothing) == 0
    clock.now += 0.2
    with CaptureQueriesContext(connection) as renewal:
        assert keeper.keep(early=True)
    assert [q["sql"].split()[0] for q in renewal] == ["UPDATE"]
    assert keeper.seconds_until_renewal() == pytest.approx(2.5)
    assert Lease.objects.get(name="runexpiry").expires_at.timestamp() == pytest.approx(clock.now + 5)


def test_with_the_default_ttl_every_safety_look_after_a_renewal_renews():
    """An idle daemon wakes every SAFETY_INTERVAL; each such wake-up falls in
    the early-renewal window of the renewal before, so the lease never wakes
    it on its own (docs/benchmarks.md, "Idle wake-ups")."""
    clock = Clock()
    keeper = LeaseKeeper(ttl=DEFAULT_TTL, owner="a", clock=clock)
    assert keeper.keep()
    assert DEFAULT_TTL / 2 - DEFAULT_TTL * EARLY_RENEWAL <= SAFETY_INTERVAL < keeper.seconds_until_renewal()
    for _ in range(5):
        clock.now += SAFETY_INTERVAL
        with CaptureQueriesContext(connection) as renewal:
            assert keeper.keep(early=True)
        assert [q["sql"].split()[0] for q in renewal] == ["UPDATE"]
