"""Coalescing that follows the load (expiry.coalescing): the slack is the
whole --coalesce at the full rate or more, in proportion below it, and
nothing once the daemon has been quiet; without a full rate it is always
the whole slack."""

import time
from datetime import timedelta

import pytest
from django.utils import timezone
from freezegun import freeze_time

from expiry.coalescing import RATE_WINDOW, Coalescing
from expiry.scheduler import ExpiryScheduler
from expiry.store import ShareStore
from sharing.models import Share


def test_without_a_full_rate_the_slack_is_always_the_whole_of_it():
    assert Coalescing(0.002).slack(head=100.0) == 0.002


def test_with_a_full_rate_nothing_waits_before_anything_expired():
    assert Coalescing(0.002, full_rate=1000).slack(head=100.0) == 0.0


def test_the_slack_grows_with_the_rate_and_stops_at_the_whole_of_it():
    half = Coalescing(0.002, full_rate=1000)
    for step in range(12):  # 50 expiries every 0.01 s: 5,000 a second
        half.record(50, 100.0 + step * 0.01)
    assert half.rate == pytest.approx(5000)
    assert Coalescing(0.002, full_rate=10_000).slack(100.1) == 0.0  # a fresh one knows nothing
    slow = Coalescing(0.002, full_rate=10_000)
    slow.rate, slow._window_start = 5000, 100.0  # as measured above
    assert slow.slack(head=100.1) == pytest.approx(0.001)
    assert half.slack(head=100.1) == 0.002  # 5,000 a second is past its full rate of 1,000


def test_a_quiet_spell_takes_the_slack_back_to_nothing():
    busy = Coalescing(0.002, full_rate=1000)
    for step in range(12):
        busy.record(50, 100.0 + step * 0.01)
    assert busy.slack(head=100.11 + RATE_WINDOW) == 0.002
    assert busy.slack(head=100.11 + 3 * RATE_WINDOW) == 0.0  # the rate seen then is stale
    busy.record(1, 105.0)  # the first expiry after the spell counts the spell in
    assert busy.rate < 1


@pytest.mark.django_db(transaction=True)
def test_a_pair_due_close_together_waits_only_once_the_daemon_is_busy(shared_file):
    with freeze_time("2026-03-01 12:00:00") as frozen:
        due = timezone.now() + timedelta(seconds=1)
        for offset in (0, 0.0005):
            Share.create_for(file=shared_file, expires_at=due + timedelta(seconds=offset))
        scheduler = ExpiryScheduler(
            ShareStore(), clock=time.time, refresh_interval=60, coalesce=0.002, coalesce_full_rate=1000
        )
        while scheduler.step():
            pass
        assert scheduler.seconds_until_next() == pytest.approx(1.0)  # quiet so far: no waiting
        scheduler.coalescing.rate, scheduler.coalescing._window_start = 2000, time.time() + 0.95
        assert scheduler.seconds_until_next() == pytest.approx(1.002)  # busy: the head waits for its neighbour
        frozen.tick(1.002)
        assert scheduler.step()
        assert (scheduler.stats.batches, scheduler.stats.expired) == (1, 2)
