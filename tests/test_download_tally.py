"""Downloads of links without a limit: pending rows, folded later, never lost.

An unlimited link's download does not update the share's row (so downloads of
a hot link do not queue for its row lock); the exact count is download_count
plus the pending rows, everywhere it is shown, and folding moves them into
download_count without losing or doubling one.
"""

import threading
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from expiry.housekeeping import Housekeeper
from sharing.models import Download, ReactivationRefused, Share, fold_pending, reactivate
from tests.helpers import in_threads, wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def unlimited(shared_file, **kwargs) -> Share:
    return Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1), **kwargs)


def download(share: Share):
    return Share.objects.get(pk=share.pk).reserve_bytes(first=0, end=10)


def stored_count(share: Share) -> int:
    share.refresh_from_db()
    return share.download_count


def test_an_unlimited_download_is_a_pending_row_not_an_update(shared_file):
    share = unlimited(shared_file)
    updated_at = share.updated_at
    assert download(share).budgeted is False  # nothing to settle either
    share.refresh_from_db()
    assert (share.download_count, share.updated_at) == (0, updated_at)  # the share's row was not written
    assert share.total_downloads == 1
    assert Share.objects.with_pending_downloads().get(pk=share.pk).pending_downloads == 1


def test_a_limited_download_is_counted_in_the_row(shared_file):
    share = unlimited(shared_file, max_downloads=5)
    assert download(share).budgeted is True
    assert stored_count(share) == 1
    assert not Download.objects.filter(pending=True).exists()


def test_a_link_owing_a_first_download_notice_is_counted_in_the_row(shared_file):
    """The notice's claim reads download_count > 0 (notices.claims)."""
    share = unlimited(shared_file, notify_first_download=True)
    download(share)
    assert stored_count(share) == 1


def test_an_instance_that_missed_a_new_limit_is_counted_exactly(shared_file):
    """The row read under the lock decides, not the caller's stale instance."""
    stale = unlimited(shared_file)
    Share.objects.get(pk=stale.pk).change(max_downloads=1)
    assert stale.max_downloads is None
    reservation = stale.reserve_bytes(first=0, end=10)
    assert reservation is not None
    assert stale.reserve_bytes(first=0, end=10) is None  # the limit held
    reservation.settle(reservation.end)
    stale.refresh_from_db()
    assert (stale.download_count, stale.status, stale.end_reason) == (1, "expired", "download_limit")


def test_ended_links_count_nothing(shared_file):
    share = unlimited(shared_file)
    Share.objects.get(pk=share.pk).unshare()
    assert download(share) is None
    past = unlimited(shared_file)
    Share.objects.filter(pk=past.pk).update(expires_at=timezone.now(), created_at=timezone.now() - timedelta(hours=1))
    assert download(past) is None
    assert not Download.objects.exists()


def test_folding_moves_pending_rows_into_the_count_once(shared_file):
    shares = [unlimited(shared_file) for _ in range(3)]
    for n, share in enumerate(shares):
        for _ in range(n + 1):
            download(share)
    assert fold_pending(limit=2) == 2  # bounded: two shares this time
    assert fold_pending(limit=2) == 1
    assert fold_pending(limit=2) == 0
    assert [stored_count(share) for share in shares] == [1, 2, 3]
    assert [share.total_downloads for share in shares] == [1, 2, 3]
    assert not Download.objects.filter(pending=True).exists()


def test_racing_downloads_and_folds_lose_nothing(shared_file):
    share = unlimited(shared_file)
    done = threading.Event()

    def fold_until_done():
        while not done.is_set():
            fold_pending()
        return fold_pending()

    folder = threading.Thread(target=lambda: in_threads(fold_until_done))
    folder.start()
    try:
        results = in_threads(lambda: [download(share) is not None for _ in range(10)], workers=6)
    finally:
        done.set()
        folder.join(60)
    assert sum(sum(r) for r in results) == 60
    assert stored_count(share) == 60
    assert share.total_downloads == 60


def test_a_new_limit_is_judged_against_pending_downloads(shared_file):
    share = unlimited(shared_file)
    for _ in range(3):
        download(share)
    with pytest.raises(ValidationError, match="3 downloads' worth"):
        Share.objects.get(pk=share.pk).change(max_downloads=2)
    assert Share.objects.get(pk=share.pk).change(max_downloads=3)
    share.refresh_from_db()
    assert (share.download_count, share.status, share.end_reason) == (3, "expired", "download_limit")
    assert not Download.objects.filter(pending=True).exists()


def test_reactivating_with_reset_drops_the_pending_downloads_too(shared_file):
    share = unlimited(shared_file)
    download(share)
    download(share)
    Share.objects.get(pk=share.pk).unshare()
    reactivate(share, timezone.now() + timedelta(hours=1), reset_downloads=True, max_downloads=1)
    share.refresh_from_db()
    assert (share.download_count, share.total_downloads, share.status) == (0, 0, "active")
    assert download(share) is not None
    assert download(share) is None  # exactly the one allowed after the reset


def test_reactivating_with_a_limit_counts_the_pending_downloads(shared_file):
    share = unlimited(shared_file)
    download(share)
    download(share)
    Share.objects.get(pk=share.pk).unshare()
    with pytest.raises(ReactivationRefused, match="2 downloads started"):
        reactivate(share, timezone.now() + timedelta(hours=1), max_downloads=2)


def test_the_api_shows_every_download_before_the_fold(shared_file, alice_client):
    share = unlimited(shared_file)
    download(share)
    download(share)
    detail = alice_client.get(f"/api/shares/{share.pk}/").json()
    listed = alice_client.get("/api/shares/").json()["results"]
    assert detail["download_count"] == 2
    assert [s["download_count"] for s in listed if s["id"] == share.pk] == [2]
    fold_pending()
    assert alice_client.get(f"/api/shares/{share.pk}/").json()["download_count"] == 2


def test_the_daemons_housekeeping_folds(shared_file):
    share = unlimited(shared_file)
    download(share)
    keeper = Housekeeper(clock=lambda: 0.0)
    while keeper.step(room=60.0):
        pass
    assert keeper.folded == 1
    assert stored_count(share) == 1


@pytest.mark.postgres
def test_postgresql_downloads_of_one_link_do_not_wait_for_each_other(shared_file):
    """While one download's transaction is still open (its FOR SHARE lock
    held), another download of the same link commits, and an unshare waits
    for both (so no download is counted after the unshare's decision)."""
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: SQLite has one writer at a time by design")
    share = unlimited(shared_file)
    first_counted, second_done, release = threading.Event(), threading.Event(), threading.Event()
    order = []

    def first():
        with transaction.atomic():
            assert download(share) is not None
            first_counted.set()
            release.wait(30)
            order.append("first commits")

    def second():
        first_counted.wait(30)
        assert download(share) is not None
        order.append("second counted")
        second_done.set()

    def unshare():
        second_done.wait(30)
        assert Share.objects.get(pk=share.pk).unshare()
        order.append("unshared")

    threads = [threading.Thread(target=_closing, args=(work,)) for work in (first, second, unshare)]
    for thread in threads:
        thread.start()
    try:
        assert second_done.wait(30), "the second download waited for the first one's transaction"
        assert wait_until(lambda: waiting_for_a_lock(share) == 1, timeout=10), "the unshare did not wait"
    finally:
        release.set()
        for thread in threads:
            thread.join(60)
    assert order == ["second counted", "first commits", "unshared"]
    share.refresh_from_db()
    assert share.total_downloads == 2


def waiting_for_a_lock(share: Share) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND query LIKE %s",
            ["%sharing_share%"],
        )
        return cursor.fetchone()[0]


def _closing(work) -> None:
    try:
        work()
    finally:
        connection.close()


def test_a_new_limit_set_over_the_api_shows_each_download_once(shared_file, alice_client):
    share = unlimited(shared_file)
    for _ in range(3):
        download(share)
    response = alice_client.patch(f"/api/shares/{share.pk}/", {"max_downloads": 5}, format="json")
    assert response.status_code == 200, response.content
    assert (response.json()["download_count"], response.json()["downloads_left"]) == (3, 2)


def test_a_created_share_is_answered_without_counting_its_downloads(shared_file, alice_client):
    with CaptureQueriesContext(connection) as queries:
        response = alice_client.post("/api/shares/", {"file": shared_file.pk, "expires_in": 60}, format="json")
    assert response.status_code == 201
    assert response.json()["download_count"] == 0
    assert not any("sharing_download" in query["sql"] for query in queries.captured_queries)
