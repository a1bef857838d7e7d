"""The lease that lets one of several daemons expire while the others stand by.

The keeper tests are the row lease's (expiry/lease.py: PostgreSQL with
`--lease on`), run on either database; SQLite's lock is tested in
tests/test_lease_lock.py, and both under the daemon thread at the end.
Real database, real connections (threads) and a fake clock where time matters.
"""

import time
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from expiry.lease import LeaseKeeper
from expiry.lease_lock import LockLease, lock_path
from expiry.models import Lease
from expiry.service import ExpiryService, build_service
from expiry.store import to_datetime
from sharing.models import Share
from tests.helpers import in_threads, wait_until


class FakeClock:
    def __init__(self, now: float = 1_800_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def tick(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock():
    return FakeClock()


def keeper(clock, owner: str, ttl: float = 5.0) -> LeaseKeeper:
    return LeaseKeeper(ttl=ttl, owner=owner, clock=clock)


@pytest.mark.django_db
def test_the_first_daemon_takes_the_lease_and_the_second_stands_by(clock):
    alpha, beta = keeper(clock, "alpha"), keeper(clock, "beta")
    assert alpha.keep()
    assert not beta.keep()
    assert Lease.objects.get(name="runexpiry").owner == "alpha"
    assert beta.holder() == ("alpha", clock() + 5.0)


@pytest.mark.django_db
def test_a_lease_not_renewed_lapses_and_a_stand_by_takes_it(clock):
    alpha, beta = keeper(clock, "alpha"), keeper(clock, "beta")
    alpha.keep()
    clock.tick(4.9)
    assert not beta.keep()
    clock.tick(0.1)  # alpha crashed: nobody renewed
    assert beta.keep()
    assert Lease.objects.get(name="runexpiry").owner == "beta"


@pytest.mark.django_db
def test_the_holder_renews_every_third_of_the_ttl_and_keeps_it(clock):
    alpha, beta = keeper(clock, "alpha"), keeper(clock, "beta")
    alpha.keep()
    for _ in range(10):
        clock.tick(5.0 / 3)
        assert alpha.keep()
        assert not beta.keep()
    assert Lease.objects.get(name="runexpiry").expires_at == to_datetime(clock() + 5.0)


@pytest.mark.django_db
def test_keeping_a_lease_not_due_for_renewal_costs_no_query(clock):
    alpha = keeper(clock, "alpha")
    alpha.keep()
    clock.tick(1.0)
    with CaptureQueriesContext(connection) as queries:
        assert alpha.keep()
    assert len(queries) == 0


@pytest.mark.django_db
def test_a_stand_by_only_reads_while_the_lease_is_held(clock):
    keeper(clock, "alpha").keep()
    beta = keeper(clock, "beta")
    with CaptureQueriesContext(connection) as queries:
        assert not beta.keep()
    assert [q["sql"].split()[0] for q in queries.captured_queries] == ["SELECT"]


@pytest.mark.django_db
def test_a_holder_whose_lease_was_taken_loses_it_at_its_next_renewal(clock):
    alpha, beta = keeper(clock, "alpha"), keeper(clock, "beta")
    alpha.keep()
    clock.tick(6)  # alpha stalled past its ttl; beta took over
    assert beta.keep()
    assert not alpha.held
    assert not alpha.keep()
    assert Lease.objects.get(name="runexpiry").owner == "beta"


@pytest.mark.django_db
def test_the_holder_stops_counting_on_its_lease_before_anyone_else_could_take_it(clock):
    alpha = keeper(clock, "alpha", ttl=5.0)
    alpha.keep()
    clock.tick(3.99)
    assert alpha.held
    clock.tick(0.02)  # 1 s of margin before the lease lapses in the database
    assert not alpha.held


@pytest.mark.django_db
def test_release_lets_a_stand_by_take_over_at_once(clock):
    alpha, beta = keeper(clock, "alpha"), keeper(clock, "beta")
    alpha.keep()
    alpha.release()
    assert not alpha.held
    assert beta.keep()


@pytest.mark.django_db
def test_release_by_a_former_holder_does_not_touch_the_new_holders_lease(clock):
    alpha, beta = keeper(clock, "alpha"), keeper(clock, "beta")
    alpha.keep()
    clock.tick(6)
    beta.keep()
    alpha.release()
    assert Lease.objects.get(name="runexpiry").expires_at == to_datetime(clock() + 5.0)


def race_for_the_lease(contenders: int) -> list[str]:
    """Let `contenders` daemons try to take the lease at once; return who won."""

    def contend():
        lease = LeaseKeeper()
        return lease.owner if lease.keep() else None

    return [owner for owner in in_threads(contend, contenders) if owner]


@pytest.mark.django_db(transaction=True)
def test_of_many_daemons_racing_for_a_lapsed_lease_exactly_one_wins():
    Lease.objects.create(name="runexpiry", owner="crashed", expires_at=timezone.now() - timedelta(seconds=1))
    won = race_for_the_lease(8)
    assert len(won) == 1
    assert Lease.objects.get(name="runexpiry").owner == won[0]


@pytest.mark.django_db(transaction=True)
def test_of_many_daemons_racing_for_a_lease_nobody_created_yet_exactly_one_wins():
    won = race_for_the_lease(6)
    assert len(won) == 1
    assert Lease.objects.count() == 1


# --- the daemon thread with a lease ----------------------------------------------


def lease_daemon(keeper) -> ExpiryService:
    return build_service(refresh_interval=3600, pickup_interval=0.05, lease_keeper=keeper, webhooks=False)


def stop_service(service: ExpiryService) -> None:
    service.stop()
    service.join(5)
    service.close()


def status_of(share: Share) -> str:
    share.refresh_from_db()
    return share.status


@pytest.mark.django_db(transaction=True)
def test_a_holder_that_cannot_renew_stops_expiring_and_stands_by_until_the_lease_is_free(shared_file):
    service = lease_daemon(LeaseKeeper(ttl=1.5, owner="holder"))
    daemon = service.daemon
    try:
        service.start()
        assert wait_until(lambda: daemon.leading, 5)
        # Another daemon takes the lease (as after this one stalled past its ttl).
        Lease.objects.filter(name="runexpiry").update(owner="thief", expires_at=timezone.now() + timedelta(hours=1))
        share = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(seconds=1.0))
        assert wait_until(lambda: daemon.leading is False, 2)  # noticed at the next renewal (ttl/3)
        time.sleep(max(0.0, share.expires_at.timestamp() - time.time()) + 0.5)
        assert status_of(share) == Share.Status.ACTIVE  # not this daemon's to expire any more
        assert len(service.scheduler) == 0

        Lease.objects.filter(name="runexpiry").update(expires_at=timezone.now())  # the thief exits
        assert wait_until(lambda: status_of(share) == Share.Status.EXPIRED, 5)
        assert daemon.leading
    finally:
        stop_service(service)
    assert not daemon.is_alive()
    assert Lease.objects.get(name="runexpiry").expires_at <= timezone.now()  # released on exit


@pytest.mark.django_db(transaction=True)
def test_a_stand_by_daemon_expires_nothing_while_another_holds_the_row_lease(shared_file):
    Lease.objects.create(name="runexpiry", owner="other", expires_at=timezone.now() + timedelta(hours=1))
    share = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(seconds=0.3))
    service = lease_daemon(LeaseKeeper(ttl=5, owner="stand-by"))
    try:
        service.start()
        time.sleep(1.2)
        assert service.daemon.leading is False
        assert status_of(share) == Share.Status.ACTIVE
    finally:
        stop_service(service)
    assert Lease.objects.get(name="runexpiry").owner == "other"  # a stand-by releases nothing


@pytest.fixture
def other_holder():
    """Another daemon's hold on SQLite's lease lock (a LockLease of its own)."""
    if lock_path() is None:
        pytest.skip("the lease is a lock only on a SQLite file")
    other = LockLease(lock_path(), owner="other")
    assert other.keep()
    yield other
    other.release()


@pytest.mark.django_db(transaction=True)
def test_a_stand_by_daemon_expires_nothing_while_another_holds_the_lock(shared_file, other_holder):
    share = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(seconds=0.3))
    service = lease_daemon(LockLease(lock_path(), owner="stand-by"))
    try:
        service.start()
        time.sleep(1.2)
        assert service.daemon.leading is False
        assert status_of(share) == Share.Status.ACTIVE
        assert len(service.scheduler) == 0
    finally:
        stop_service(service)
    assert Lease.objects.get(name="runexpiry").owner == "other"  # a stand-by releases nothing
    assert other_holder.keep()  # nor does it keep the lock it was waiting for


@pytest.mark.django_db(transaction=True)
def test_a_stand_by_daemon_takes_over_as_soon_as_the_lock_is_let_go(shared_file, other_holder):
    service = lease_daemon(LockLease(lock_path(), owner="stand-by"))
    daemon = service.daemon
    try:
        service.start()
        assert wait_until(lambda: daemon.leading is False, 5)
        share = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(seconds=0.2))
        time.sleep(0.5)
        assert status_of(share) == Share.Status.ACTIVE
        other_holder.release()  # the other daemon stops
        # Woken by the lock's waiting thread, not at its next look (once a
        # second): it takes over, catches up and expires the share.
        assert wait_until(lambda: status_of(share) == Share.Status.EXPIRED, 5)
        assert daemon.leading
        assert Lease.objects.get(name="runexpiry").owner == "stand-by"
    finally:
        stop_service(service)
    assert Lease.objects.get(name="runexpiry").expires_at <= timezone.now()  # released on exit
