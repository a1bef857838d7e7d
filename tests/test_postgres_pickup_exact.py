"""PostgreSQL: the pick-up safety net misses no commit, however late
(hardening: the watermark used to be updated_at minus 0.2 s)."""

import threading
from datetime import timedelta

import pytest
from django.db import connection, connections, transaction  # noqa: F401  (connection: the skipif condition)
from django.utils import timezone

from expiry.scheduler import ExpiryScheduler
from expiry.store import ShareStore
from expiry.watchers import PollingWatcher
from sharing.models import Share
from tests.helpers import hold, in_other_connection

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif("connection.vendor != 'postgresql'", reason="PostgreSQL's transaction ids"),
    pytest.mark.django_db(transaction=True),
]

NEVER = 3600.0


def silent_share(stored_file, *, seconds: float, written_at) -> Share:
    """Insert a share the way a bulk loader would: no notice to any daemon."""
    share = Share.objects.create(
        owner=stored_file.owner,
        size=stored_file.size,
        least=stored_file.size,
        created_at=written_at,
        updated_at=written_at,
        expires_at=timezone.now() + timedelta(seconds=seconds),
    )
    hold([share], stored_file)
    return share


class SlowCommit(threading.Thread):
    """A transaction that reads its clock, writes a share, then waits to commit."""

    def __init__(self, stored_file, clock_read_ago: float):
        super().__init__()
        self.stored_file = stored_file
        self.clock_read_ago = clock_read_ago
        self.written = threading.Event()
        self.commit = threading.Event()
        self.share = None

    def run(self):
        try:
            with transaction.atomic():
                written_at = timezone.now() - timedelta(seconds=self.clock_read_ago)
                self.share = silent_share(self.stored_file, seconds=60, written_at=written_at)
                self.written.set()
                self.commit.wait(10)
        finally:
            connections.close_all()


def test_a_share_committed_long_after_its_clock_read_is_still_picked_up(shared_file):
    scheduler = ExpiryScheduler(ShareStore(), refresh_interval=NEVER, watcher=PollingWatcher())
    while scheduler.step():
        pass
    slow = SlowCommit(shared_file, clock_read_ago=1.0)
    slow.start()
    try:
        assert slow.written.wait(10)
        # Meanwhile another share commits at once, and pick-up sees it.
        quick = in_other_connection(lambda: silent_share(shared_file, seconds=60, written_at=timezone.now()))
        scheduler.pick_up()
        assert scheduler.scheduled_deadline(quick.pk) is not None
    finally:
        slow.commit.set()
        slow.join(10)
    # The slow one committed after that look; its updated_at is 1 s older than quick's.
    scheduler.pick_up()
    assert scheduler.scheduled_deadline(slow.share.pk) == slow.share.expires_at.timestamp()


def test_pick_up_reads_only_what_was_written_since(shared_file):
    scheduler = ExpiryScheduler(ShareStore(), refresh_interval=NEVER, watcher=PollingWatcher())
    while scheduler.step():
        pass
    first = silent_share(shared_file, seconds=60, written_at=timezone.now())
    assert scheduler.pick_up() == 1
    assert scheduler.pick_up() == 0  # nothing new: nothing scheduled again
    Share.objects.filter(pk=first.pk).update(expires_at=first.expires_at + timedelta(seconds=5))
    assert scheduler.pick_up() == 1  # a renewal, however it was written
    assert scheduler.scheduled_deadline(first.pk) == (first.expires_at + timedelta(seconds=5)).timestamp()
