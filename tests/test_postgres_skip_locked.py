"""PostgreSQL: several daemons claim due rows with FOR UPDATE SKIP LOCKED.

A second real connection (psycopg, outside Django) holds row locks the way
another daemon's open batch, or a web request's write, would.
"""

import time

import psycopg
import pytest
from django.db import connection
from django.utils import timezone
from freezegun import freeze_time

from expiry.scheduler import RECHECK_DELAY, ExpiryScheduler
from expiry.store import ShareStore
from expiry.watchers import conninfo_for
from sharing.models import Share
from tests.helpers import in_threads

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif("connection.vendor != 'postgresql'", reason="needs PostgreSQL"),
]


@pytest.fixture
def other_connection():
    """A second session on the test database, like another daemon's."""
    with psycopg.connect(conninfo_for("default")) as conn:
        yield conn


def lock_rows(conn, share_ids: list[int]) -> None:
    conn.execute("SELECT id FROM sharing_share WHERE id = ANY(%s) FOR UPDATE", [share_ids])


@pytest.fixture
def no_lock_waits():
    """A regression that waits for a lock fails in 2 s instead of hanging."""
    with connection.cursor() as cursor:
        cursor.execute("SET lock_timeout = '2s'")
    yield
    with connection.cursor() as cursor:
        cursor.execute("RESET lock_timeout")


@pytest.mark.django_db(transaction=True)
def test_rows_another_session_holds_are_skipped_not_waited_for(make_shares, other_connection, no_lock_waits):
    shares = make_shares(6, 1)
    ids = sorted(s.pk for s in shares)
    lock_rows(other_connection, ids[:4])
    started = time.monotonic()
    expired = ShareStore().expire(ids, time.time() + 5)
    assert time.monotonic() - started < 1
    assert sorted(expired) == ids[4:]

    other_connection.rollback()
    assert sorted(ShareStore().expire(ids, time.time() + 5)) == ids[:4]


@pytest.mark.django_db(transaction=True)
def test_a_skipped_share_is_looked_at_again_shortly_not_at_once(make_shares, other_connection, no_lock_waits):
    with freeze_time(timezone.now()) as frozen:
        (share,) = make_shares(1, 2)
        scheduler = ExpiryScheduler(ShareStore(), clock=time.time, refresh_interval=60)
        while scheduler.step():
            pass
        frozen.tick(2)
        lock_rows(other_connection, [share.pk])

        assert scheduler.step()  # the claim skips the locked row
        assert Share.objects.get(pk=share.pk).status == Share.Status.ACTIVE
        assert scheduler.seconds_until_next() == pytest.approx(RECHECK_DELAY)  # no hot spin
        assert not scheduler.step()  # nothing to do until then

        other_connection.rollback()  # the holder went away without expiring it
        frozen.tick(RECHECK_DELAY)
        assert scheduler.step()
        share.refresh_from_db()
        assert share.status == Share.Status.EXPIRED
        assert scheduler.stats.worst_lateness == pytest.approx(RECHECK_DELAY, abs=1e-3)  # from the real deadline


@pytest.mark.django_db(transaction=True)
def test_a_share_another_daemon_expired_meanwhile_is_dropped_after_the_recheck(make_shares, other_connection):
    with freeze_time(timezone.now()) as frozen:
        (share,) = make_shares(1, 2)
        scheduler = ExpiryScheduler(ShareStore(), clock=time.time, refresh_interval=60)
        while scheduler.step():
            pass
        frozen.tick(2)
        lock_rows(other_connection, [share.pk])
        scheduler.step()
        other_connection.execute(
            "UPDATE sharing_share SET status = 'expired', end_reason = 'expired', ended_at = now() WHERE id = %s",
            [share.pk],
        )
        other_connection.commit()
        frozen.tick(RECHECK_DELAY)
        assert scheduler.step()
        assert scheduler.stats.expired == 0
        assert len(scheduler) == 0


@pytest.mark.django_db(transaction=True)
def test_catch_up_by_several_daemons_splits_the_overdue_rows(make_shares):
    ids = sorted(s.pk for s in make_shares(4000, 1))

    def work():
        store, claimed = ShareStore(), []
        while batch := store.expire_overdue(time.time() + 5, 200):
            claimed += batch
        return claimed

    results = in_threads(work, 3)
    claimed = [share_id for result in results for share_id in result]
    assert sorted(claimed) == ids
    assert sum(1 for result in results if result) >= 2, [len(r) for r in results]
