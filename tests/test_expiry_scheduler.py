"""The heap scheduler against a real database, with time pinned by freezegun.

freezegun patches time.time, so the scheduler's clock is passed as
`time.time` looked up while time is frozen, and "waiting" is frozen.tick():
no threads and no sleeps here.
"""

import time
from datetime import timedelta

import pytest
from django.db import connection  # noqa: F401  (read by skipif conditions)
from django.utils import timezone
from freezegun import freeze_time

from expiry.scheduler import ExpiryScheduler
from expiry.store import ShareStore
from expiry.window import WINDOW_OVERLAP, refresh_interval_for
from sharing.models import Share, SharingPolicy, delete_file
from sharing.signals import shares_expired

START = "2026-03-01 12:00:00"


@pytest.fixture
def frozen():
    with freeze_time(START) as frozen:
        yield frozen


@pytest.fixture
def share_due(shared_file):
    def make(seconds: float) -> Share:
        return Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(seconds=seconds))

    return make


def make_scheduler(store: ShareStore | None = None, **options) -> ExpiryScheduler:
    options.setdefault("refresh_interval", 60)
    scheduler = ExpiryScheduler(store or ShareStore(), clock=time.time, **options)
    scheduler.step()  # catch-up at start
    return scheduler


def status_of(share: Share) -> str:
    share.refresh_from_db()
    return share.status


# --- window arithmetic -------------------------------------------------------


@pytest.mark.parametrize(
    ("lifetime", "interval"),
    [
        (timedelta(days=30), 86400),
        (timedelta(days=7), 86400),
        (timedelta(days=1), 86400),
        (timedelta(hours=10), 3600),
        (timedelta(seconds=100), 10),
    ],
)
def test_refresh_interval_follows_the_reference_rule(lifetime, interval):
    assert refresh_interval_for(lifetime) == pytest.approx(interval)


def test_refresh_loads_only_shares_due_before_the_next_refresh(frozen, share_due):
    soon, late_in_window, past_window, tomorrow = share_due(10), share_due(59), share_due(62), share_due(86400)
    scheduler = make_scheduler(refresh_interval=60)
    scheduler.step()  # refresh

    assert scheduler.window_end == pytest.approx(time.time() + 60 + WINDOW_OVERLAP)
    assert scheduler.scheduled_deadline(soon.pk) == soon.expires_at.timestamp()
    assert scheduler.scheduled_deadline(late_in_window.pk) is not None
    assert scheduler.scheduled_deadline(past_window.pk) is None
    assert scheduler.scheduled_deadline(tomorrow.pk) is None
    assert len(scheduler) == 2


def test_next_refresh_loads_the_next_window(frozen, share_due):
    later = share_due(100)
    scheduler = make_scheduler(refresh_interval=60)
    scheduler.step()
    assert scheduler.scheduled_deadline(later.pk) is None

    frozen.tick(60)
    assert scheduler.step()  # the second refresh
    assert scheduler.scheduled_deadline(later.pk) == later.expires_at.timestamp()


def test_window_is_a_tenth_of_a_short_default_lifetime(frozen, share_due):
    SharingPolicy.objects.create(default_lifetime=timedelta(seconds=100), max_lifetime=timedelta(days=1))
    inside, outside = share_due(5), share_due(20)
    scheduler = make_scheduler(refresh_interval=None)
    scheduler.step()

    assert scheduler.next_refresh == pytest.approx(time.time() + 10)
    assert scheduler.scheduled_deadline(inside.pk) is not None
    assert scheduler.scheduled_deadline(outside.pk) is None


def test_window_is_a_day_with_the_default_policy(frozen, share_due):
    in_a_day, in_two_days = share_due(86000), share_due(2 * 86400)
    scheduler = make_scheduler(refresh_interval=None)
    scheduler.step()

    assert scheduler.next_refresh == pytest.approx(time.time() + 86400)
    assert scheduler.scheduled_deadline(in_a_day.pk) is not None
    assert scheduler.scheduled_deadline(in_two_days.pk) is None


# --- heap behaviour ----------------------------------------------------------


def test_shares_expire_in_deadline_order(frozen, share_due):
    third, first, second = share_due(3), share_due(1), share_due(2)
    scheduler = make_scheduler()
    scheduler.step()

    expired_order = []
    for _ in range(3):
        wait = scheduler.seconds_until_next()
        frozen.tick(wait)
        expired_order.extend(share_id for _, share_id in scheduler.pop_due(time.time()))
    assert expired_order == [first.pk, second.pk, third.pk]


def test_wait_is_until_the_head_falls_due(frozen, share_due):
    share_due(2.5)
    scheduler = make_scheduler()
    scheduler.step()

    assert scheduler.seconds_until_next() == pytest.approx(2.5)
    frozen.tick(2.5)
    assert scheduler.step()
    assert scheduler.stats.expired == 1


def test_refreshing_twice_pushes_nothing_twice(frozen, share_due):
    for seconds in (5, 6, 7):
        share_due(seconds)
    scheduler = make_scheduler(refresh_interval=60)
    scheduler.step()
    assert scheduler.refresh(time.time()) == 0
    assert scheduler.pick_up() == 0

    assert len(scheduler._heap) == 3
    assert len(scheduler) == 3


def test_renewal_reschedules_and_the_stale_entry_is_dropped(frozen, share_due):
    share = share_due(10)
    scheduler = make_scheduler()
    scheduler.step()

    share.set_expiry(timezone.now() + timedelta(seconds=20))
    assert scheduler.pick_up() == 1
    assert scheduler.scheduled_deadline(share.pk) == share.expires_at.timestamp()

    frozen.tick(10)
    assert scheduler.pop_due(time.time()) == []  # the old entry is stale
    assert status_of(share) == Share.Status.ACTIVE
    frozen.tick(10)
    scheduler.step()
    assert status_of(share) == Share.Status.EXPIRED


def test_renewal_past_the_window_unschedules(frozen, share_due):
    share = share_due(10)
    scheduler = make_scheduler(refresh_interval=60)
    scheduler.step()

    share.set_expiry(timezone.now() + timedelta(hours=5))
    scheduler.pick_up()
    assert scheduler.scheduled_deadline(share.pk) is None
    assert len(scheduler) == 0


def test_burst_is_expired_in_batches_of_sorted_ids(frozen, share_due, django_capture_on_commit_callbacks):
    shares = [share_due(1) for _ in range(12)]
    scheduler = make_scheduler(batch_size=5, store=ShareStore(bulk=False))
    scheduler.step()
    frozen.tick(1)

    batches = []

    def record(sender, share_ids, **kwargs):
        batches.append(sorted(share_ids))

    shares_expired.connect(record, dispatch_uid="test-batches")
    try:
        for _ in range(3):  # one batch a step, so a lease is renewed between batches
            with django_capture_on_commit_callbacks(execute=True):
                assert scheduler.step()
    finally:
        shares_expired.disconnect(dispatch_uid="test-batches")
    assert scheduler.seconds_until_next() > 0  # nothing due is left
    assert scheduler.stats.batches == 3
    assert scheduler.stats.expired == 12
    ids = sorted(s.pk for s in shares)
    assert batches == [ids[:5], ids[5:10], ids[10:]]
    assert Share.objects.filter(status=Share.Status.EXPIRED).count() == 12


@pytest.mark.skipif("connection.vendor != 'sqlite'", reason="bursts read their ids first on SQLite only")
def test_a_burst_on_sqlite_is_read_from_the_index_and_leaves_renewed_shares_alone(
    frozen, share_due, django_capture_on_commit_callbacks
):
    shares = [share_due(1) for _ in range(12)]
    renewed = shares[3]
    scheduler = make_scheduler(batch_size=5)
    scheduler.step()
    renewed.set_expiry(timezone.now() + timedelta(seconds=30))  # not yet picked up
    frozen.tick(1)

    batches = []
    shares_expired.connect(
        lambda sender, share_ids, **kw: batches.append(sorted(share_ids)), dispatch_uid="b", weak=False
    )
    try:
        with django_capture_on_commit_callbacks(execute=True):
            assert scheduler.step()
    finally:
        shares_expired.disconnect(dispatch_uid="b")
    assert batches == [sorted(s.pk for s in shares if s is not renewed)]
    assert scheduler.stats.expired == 11
    assert status_of(renewed) == Share.Status.ACTIVE
    assert scheduler.scheduled_deadline(renewed.pk) == renewed.expires_at.timestamp()
    assert scheduler.seconds_until_next() > 0


# --- re-validation -----------------------------------------------------------


def test_a_share_renewed_after_refresh_is_not_expired_at_its_old_deadline(frozen, share_due):
    share = share_due(5)
    scheduler = make_scheduler()
    scheduler.step()
    share.set_expiry(timezone.now() + timedelta(seconds=30))

    frozen.tick(5)
    scheduler.expire_due(time.time())  # pops the old entry: the UPDATE must refuse it
    assert status_of(share) == Share.Status.ACTIVE
    assert scheduler.scheduled_deadline(share.pk) == share.expires_at.timestamp()


def test_a_share_unshared_after_refresh_stays_unshared(frozen, share_due):
    share = share_due(5)
    scheduler = make_scheduler()
    scheduler.step()
    share.unshare()

    frozen.tick(5)
    assert scheduler.expire_due(time.time()) == 0
    share.refresh_from_db()
    assert (share.status, share.end_reason) == (Share.Status.UNSHARED, Share.EndReason.UNSHARED)
    assert len(scheduler) == 0


def test_a_share_whose_file_was_deleted_stays_unshared(frozen, share_due, shared_file):
    share = share_due(5)
    scheduler = make_scheduler()
    scheduler.step()
    delete_file(shared_file)

    frozen.tick(5)
    assert scheduler.expire_due(time.time()) == 0
    share.refresh_from_db()
    assert (share.status, share.end_reason) == (Share.Status.UNSHARED, Share.EndReason.FILE_DELETED)


def test_expiry_records_its_lateness(frozen, share_due):
    share = share_due(2)
    scheduler = make_scheduler()
    scheduler.step()
    frozen.tick(2.003)
    scheduler.step()

    share.refresh_from_db()
    assert share.status == Share.Status.EXPIRED
    assert share.lateness == timedelta(milliseconds=3)


# --- catch-up ------------------------------------------------------------------


def test_overdue_shares_are_expired_first_at_start(frozen, share_due):
    overdue = [share_due(1), share_due(2)]
    pending = share_due(30)
    frozen.tick(10)  # the daemon was down while they fell due

    scheduler = ExpiryScheduler(ShareStore(), clock=time.time, refresh_interval=60)
    assert scheduler.step()
    assert scheduler.stats.caught_up == 2
    assert [status_of(s) for s in overdue] == [Share.Status.EXPIRED] * 2
    assert status_of(pending) == Share.Status.ACTIVE
    assert len(scheduler) == 0  # catch-up does not go through the heap
    scheduler.step()
    assert scheduler.scheduled_deadline(pending.pk) is not None


def test_catch_up_works_in_batches(frozen, share_due):
    for _ in range(7):
        share_due(1)
    frozen.tick(5)
    scheduler = ExpiryScheduler(ShareStore(), clock=time.time, refresh_interval=60, batch_size=3)
    assert scheduler.catch_up() == 7
    assert not Share.objects.filter(status=Share.Status.ACTIVE).exists()


class NoticesAtHand:
    """A watcher whose notices are ready (as the wake-up socket's or LISTEN's)."""

    def __init__(self):
        self.pending: list[tuple[int, float]] = []
        self.wants_pickup = False

    def take_notices(self) -> list[tuple[int, float]]:
        taken, self.pending = self.pending, []
        return taken

    def pickup_interval(self, default: float) -> float:
        return default

    def changed(self) -> bool:
        return False


def test_a_notice_is_taken_even_while_shares_keep_falling_due(frozen, share_due):
    """Under a steady stream of due shares there is never an idle step: a
    notice must not wait for one (nor for the safety-net pick-up)."""
    first, second, created_meanwhile = share_due(5), share_due(6), share_due(30)
    watcher = NoticesAtHand()
    scheduler = make_scheduler(watcher=watcher)
    scheduler.step()  # refresh: the window holds the first two
    Share.objects.filter(pk=created_meanwhile.pk).update(expires_at=first.expires_at + timedelta(seconds=0.5))
    created_meanwhile.refresh_from_db()
    frozen.tick(5)  # the first is due: every step now has due work until the second
    watcher.pending.append((created_meanwhile.pk, created_meanwhile.expires_at.timestamp()))
    assert scheduler.step()
    assert scheduler.scheduled_deadline(created_meanwhile.pk) == created_meanwhile.expires_at.timestamp()
    assert status_of(first) == Share.Status.EXPIRED
    frozen.tick(1)
    while scheduler.step():
        pass
    assert status_of(created_meanwhile) == Share.Status.EXPIRED
    assert status_of(second) == Share.Status.EXPIRED
