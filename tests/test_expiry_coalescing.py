"""Timer coalescing and chunked bursts (performance at load, items 4 and 5).

Coalescing trades a bounded delay for fewer statements when shares fall due
close together; a lone share is never delayed. Bursts go in chunks, each a
statement of its own with its own stamp, so ended_at never precedes the
commit that made it true by more than one chunk's statement.
"""

import time
from datetime import timedelta

import pytest
from django.db import connection  # noqa: F401  (read by skipif conditions)
from django.utils import timezone
from freezegun import freeze_time

from expiry import bursts
from expiry.scheduler import ExpiryScheduler
from expiry.store import ShareStore
from sharing.models import Share
from sharing.signals import shares_expired
from tests.helpers import bulk_shares

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def frozen():
    with freeze_time("2026-03-01 12:00:00") as frozen:
        yield frozen


def due_in(stored_file, seconds: float) -> Share:
    return Share.create_for(file=stored_file, expires_at=timezone.now() + timedelta(seconds=seconds))


def started(**options) -> ExpiryScheduler:
    scheduler = ExpiryScheduler(ShareStore(), clock=time.time, refresh_interval=60, **options)
    while scheduler.step():
        pass
    return scheduler


def test_a_lone_share_is_never_delayed(frozen, shared_file):
    share = due_in(shared_file, 1)
    due_in(shared_file, 5)  # far beyond the slack
    scheduler = started(coalesce=0.002)
    assert scheduler.seconds_until_next() == pytest.approx(1.0)
    frozen.tick(1)
    assert scheduler.step()
    share.refresh_from_db()
    assert share.status == Share.Status.EXPIRED
    assert share.lateness == timedelta(0)


def test_shares_due_within_the_slack_are_expired_together(frozen, shared_file):
    first = due_in(shared_file, 1)
    second = due_in(shared_file, 1.0015)
    scheduler = started(coalesce=0.002)
    assert scheduler.seconds_until_next() == pytest.approx(1.002)  # the head waits for its neighbour
    frozen.tick(1.0)
    assert not scheduler.step()  # due, but within the slack: nothing yet
    frozen.tick(0.002)
    batches = []
    shares_expired.connect(
        lambda sender, share_ids, **kw: batches.append(sorted(share_ids)), dispatch_uid="c", weak=False
    )
    try:
        assert scheduler.step()
    finally:
        shares_expired.disconnect(dispatch_uid="c")
    assert batches == [sorted([first.pk, second.pk])]  # one statement
    first.refresh_from_db()
    assert first.lateness == timedelta(milliseconds=2)  # bounded by the slack
    assert first.ended_at >= first.expires_at


def test_without_coalescing_the_head_is_due_at_its_deadline(frozen, shared_file):
    due_in(shared_file, 1)
    due_in(shared_file, 1.0005)
    assert started().seconds_until_next() == pytest.approx(1.0)


def burst_due(stored_file, count: int) -> tuple[list[int], ExpiryScheduler]:
    """`count` shares due at one instant, already passed, in a scheduler's
    window (batches of 50, so any real burst exceeds one)."""
    ids = bulk_shares(stored_file, [0.0] * count, start_in=0.3)
    scheduler = ExpiryScheduler(ShareStore(), refresh_interval=60, batch_size=50)
    scheduler.caught_up = True
    scheduler.refresh(time.time())
    time.sleep(0.4)
    return ids, scheduler


@pytest.mark.skipif("connection.vendor != 'sqlite'", reason="bursts read their ids first on SQLite only")
def test_a_burst_goes_in_chunks_each_stamped_just_before_its_statement(shared_file, monkeypatch):
    monkeypatch.setattr(bursts, "FIRST_CHUNK", 100)
    ids, scheduler = burst_due(shared_file, 450)
    stamps = []
    shares_expired.connect(
        lambda sender, share_ids, ended_at, **kw: stamps.append((len(share_ids), ended_at)),
        dispatch_uid="s",
        weak=False,
    )
    try:
        assert scheduler.step()
    finally:
        shares_expired.disconnect(dispatch_uid="s")
    sizes = [count for count, _ in stamps]
    assert sizes[0] == 100  # then grown or shrunk to take about CHUNK_TARGET
    assert len(sizes) >= 2
    assert sum(sizes) == 450
    assert [ended for _, ended in stamps] == sorted(ended for _, ended in stamps)  # a fresh stamp each
    assert not Share.objects.filter(pk__in=ids, status=Share.Status.ACTIVE).exists()
    assert scheduler.stats.worst_stamp_gap > 0


@pytest.mark.skipif("connection.vendor != 'sqlite'", reason="bursts read their ids first on SQLite only")
def test_a_burst_larger_than_a_step_is_finished_by_the_next_steps(shared_file, monkeypatch):
    monkeypatch.setattr(bursts, "BURST_STEP", 120)
    ids, scheduler = burst_due(shared_file, 300)
    steps = 0
    while scheduler.step():
        steps += 1
    assert steps >= 3
    assert not Share.objects.filter(pk__in=ids, status=Share.Status.ACTIVE).exists()
    assert scheduler.stats.expired == 300
    assert len(scheduler) == 0
