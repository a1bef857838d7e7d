"""Downloads of links without a limit, committed in batches
(sharing.models.quick_downloads): downloads that arrive while one waits for
the database's lock are decided in one transaction, each by its own
statement, at the time read once the lock is held; each caller gets its own
answer, and every one that was allowed is in the history."""

import threading
from datetime import timedelta

import pytest
from django.db import connection, connections, transaction
from django.utils import timezone

from sharing.models import Download, Share, ShareEvent
from sharing.models.quick_downloads import _batches
from tests.helpers import HeldLock, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

CALLERS = 6


def hot_link(shared_file, **kwargs) -> Share:
    return Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1), **kwargs)


def download(share_id: int, first: int = 0):
    return Share.objects.get(pk=share_id).reserve_bytes(first=first, end=10)


def downloads_while_locked(share: Share, *, while_held=None, first: int = 0) -> list:
    """CALLERS downloads of `share` started while another client holds the
    lock a download's batch waits for; released once all of them are
    queued. On SQLite the leader takes the queue once it holds the write
    lock, so its own job is queued until then and the batch holds them all;
    on PostgreSQL it must take its jobs to know which rows to lock, so it
    waits with its own and the others form the next batch."""
    queued = CALLERS if connection.vendor == "sqlite" else CALLERS - 1
    results = [None] * CALLERS

    def run(n):
        try:
            results[n] = download(share.pk, first)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(CALLERS)]
    with HeldLock(share) as held:
        for thread in threads:
            thread.start()
        assert wait_until(lambda: len(_batches("default")._queued) == queued, timeout=10), "callers not queued"
        if while_held is not None:
            while_held(held)
    for thread in threads:
        thread.join(30)
        assert not thread.is_alive()
    return results


def downloaded_events(share: Share) -> list[ShareEvent]:
    return list(ShareEvent.objects.filter(share=share, kind=ShareEvent.Kind.DOWNLOADED))


def test_downloads_arriving_together_are_one_batch_each_counted_and_recorded(shared_file):
    share = hot_link(shared_file)
    results = downloads_while_locked(share)
    assert all(reservation is not None and reservation.share_id == share.pk for reservation in results)
    assert Download.objects.filter(share=share, pending=True).count() == CALLERS
    events = downloaded_events(share)
    assert len(events) == CALLERS
    # A time that decides per batch, read once the lock was held.
    assert len({event.at for event in events}) == (1 if connection.vendor == "sqlite" else 2)
    share.refresh_from_db()
    assert share.total_downloads == CALLERS


def test_a_batch_that_waited_past_the_deadline_refuses_every_download(shared_file):
    share = hot_link(shared_file)

    def end_it_meanwhile(held):
        # The lock's holder moves the deadline to now, as time passing would:
        # a batch that read its time before the wait would still serve.
        if connection.vendor == "sqlite":
            stamp = connection.ops.adapt_datetimefield_value(timezone.now())
            held.conn.execute("UPDATE sharing_share SET expires_at = ? WHERE id = ?", [stamp, share.pk])
        else:
            held.conn.execute("UPDATE sharing_share SET expires_at = now() WHERE id = %s", [share.pk])

    results = downloads_while_locked(share, while_held=end_it_meanwhile)
    assert results == [None] * CALLERS
    assert Download.objects.filter(share=share).count() == 0
    assert downloaded_events(share) == []


def test_a_deadline_that_passed_during_the_wait_refuses_every_download(shared_file):
    share = hot_link(shared_file)

    def deadline_passes_meanwhile(held):
        # Every download began before this deadline and waits past it: a
        # time read before the wait would serve.
        deadline = timezone.now() + timedelta(milliseconds=200)
        stamp = connection.ops.adapt_datetimefield_value(deadline)
        if connection.vendor == "sqlite":
            held.conn.execute("UPDATE sharing_share SET expires_at = ? WHERE id = ?", [stamp, share.pk])
        else:
            held.conn.execute("UPDATE sharing_share SET expires_at = %s WHERE id = %s", [stamp, share.pk])
        assert wait_until(lambda: timezone.now() > deadline + timedelta(milliseconds=20), timeout=5)

    results = downloads_while_locked(share, while_held=deadline_passes_meanwhile)
    assert results == [None] * CALLERS
    assert Download.objects.filter(share=share).count() == 0
    assert downloaded_events(share) == []


def test_resumes_in_a_batch_are_recorded_without_counting_a_copy(shared_file):
    share = hot_link(shared_file)
    results = downloads_while_locked(share, first=4)
    assert all(reservation is not None for reservation in results)
    assert Download.objects.filter(share=share).count() == 0
    resumed = ShareEvent.objects.filter(share=share, kind=ShareEvent.Kind.RESUMED)
    assert sorted(resumed.values_list("bytes", flat=True)) == [6] * CALLERS


def test_a_link_that_gained_a_limit_meanwhile_sends_each_download_the_exact_way(shared_file):
    share = hot_link(shared_file, max_downloads=2)
    results = []
    for _ in range(3):
        stale = Share.objects.get(pk=share.pk)
        stale.max_downloads = None  # as read before the limit was set
        reservation = stale.reserve_bytes(first=0, end=shared_file.size)
        if reservation is not None:
            reservation.settle(reservation.end)
        results.append(reservation is not None)
    assert results == [True, True, False]  # the budget, not the quick path, decided
    assert Download.objects.filter(share=share).count() == 0
    share.refresh_from_db()
    assert share.download_count == 2


def test_a_download_inside_a_callers_transaction_is_not_batched_and_rolls_back_with_it(shared_file):
    share = hot_link(shared_file)
    with transaction.atomic():
        assert download(share.pk) is not None
        assert _batches("default")._queued == []  # decided in the caller's transaction
        transaction.set_rollback(True)
    assert Download.objects.filter(share=share).count() == 0
    assert downloaded_events(share) == []
