"""The rule "a share holding a file its scan has not cleared is not served",
asked of the download's own statements (not only the view's early answer),
and the scan queue's claims and back-off, without clamd."""

from datetime import timedelta

import pytest
from django.utils import timezone

from scanning import queue
from sharing.models import ScanState, Share, ShareItem, StoredFile
from sharing.models.scans import FILE_TABLE, ITEM_TABLE, queue_rescan, servable_states
from tests.helpers import in_threads

pytestmark = pytest.mark.django_db


def share_of(stored: StoredFile, **fields) -> Share:
    return Share.create_for(file=stored, expires_at=timezone.now() + timedelta(hours=1), **fields)


def set_state(stored: StoredFile, state: str, due=None) -> None:
    StoredFile.objects.filter(pk=stored.pk).update(scan_state=state, scan_due_at=due)


def test_the_rule_names_the_tables_of_the_models():
    assert (ShareItem._meta.db_table, StoredFile._meta.db_table) == (ITEM_TABLE, FILE_TABLE)


@pytest.mark.parametrize("max_downloads", [None, 3], ids=["quick path", "exact path"])
@pytest.mark.parametrize("state", [ScanState.PENDING, ScanState.FAILED, ScanState.TOO_BIG, ScanState.INFECTED])
def test_the_download_statement_refuses_a_share_whose_file_is_not_cleared(state, max_downloads, shared_file):
    share = share_of(shared_file, max_downloads=max_downloads)
    set_state(shared_file, state)
    assert share.reserve_bytes(first=0, end=shared_file.size) is None
    set_state(shared_file, ScanState.CLEAN)
    assert share.reserve_bytes(first=0, end=shared_file.size) is not None


def test_one_withheld_file_withholds_the_whole_share(alice, make_file):
    first, second = make_file(alice, "a.txt"), make_file(alice, "b.txt")
    share = Share.create_for(files=[first, second], expires_at=timezone.now() + timedelta(hours=1))
    set_state(second, ScanState.PENDING)
    assert share.reserve_bytes(first=0, end=first.size) is None


def test_the_policy_decides_for_failed_and_too_big_files(settings):
    assert set(servable_states()) == {"unscanned", "clean"}
    settings.SCAN_FAIL_OPEN = True
    settings.SCAN_ABOVE_MAX = "serve"
    assert set(servable_states()) == {"unscanned", "clean", "failed", "too_big"}


def test_files_stored_while_scanning_is_on_wait_and_older_ones_are_served(alice, make_file, settings):
    before = make_file(alice, "old.txt")
    settings.CLAMD_URL = "unix:///nonexistent/clamd.ctl"
    after = make_file(alice, "new.txt")
    assert before.scan_state == ScanState.UNSCANNED
    assert after.scan_state == ScanState.PENDING
    assert after.scan_due_at is not None
    assert share_of(before).reserve_bytes(first=0, end=before.size) is not None
    assert share_of(after).reserve_bytes(first=0, end=after.size) is None


# --- the queue ------------------------------------------------------------------


def test_of_workers_racing_for_one_file_exactly_one_claims_it(transactional_db, alice, make_file):
    stored = make_file(alice)
    set_state(stored, ScanState.PENDING, due=timezone.now())
    now = timezone.now()
    claims = in_threads(lambda n: queue.claim_next(f"worker-{n}", now), 8, numbered=True)
    assert len([claim for claim in claims if claim is not None]) == 1
    assert StoredFile.objects.get(pk=stored.pk).scan_attempts == 1


def test_a_stale_claim_is_taken_over_and_the_late_verdict_does_not_count(alice, make_file, settings):
    stored = make_file(alice)
    now = timezone.now()
    set_state(stored, ScanState.PENDING, due=now)
    first, _ = queue.claim_next("slow", now)
    assert queue.claim_next("other", now + timedelta(seconds=1)) is None
    # At SCAN_CLAIM_SECONDS to the microsecond the claim still holds.
    assert queue.claim_next("other", now + timedelta(seconds=settings.SCAN_CLAIM_SECONDS)) is None
    later = now + timedelta(seconds=settings.SCAN_CLAIM_SECONDS + 1)
    second, _ = queue.claim_next("other", later)
    assert not queue.record(first, ScanState.CLEAN, later)
    assert queue.record(second, ScanState.CLEAN, later)
    stored.refresh_from_db()
    assert (stored.scan_state, stored.scan_due_at, stored.scan_attempts) == (ScanState.CLEAN, None, 2)


def test_failed_tries_back_off_and_turn_failed_after_scan_failed_after(alice, make_file, settings):
    settings.SCAN_RETRY_BASE, settings.SCAN_RETRY_MAX, settings.SCAN_FAILED_AFTER = 5, 60, 3
    stored = make_file(alice)
    now = timezone.now()
    set_state(stored, ScanState.PENDING, due=now)
    delays, states = [], []
    for _ in range(4):
        claim, row = queue.claim_next("w", now)
        assert queue.release(claim, row.scan_attempts, now)
        row.refresh_from_db()
        delays.append((row.scan_due_at - now).total_seconds())
        states.append(row.scan_state)
        now = row.scan_due_at
    assert delays == [5, 10, 20, 40]
    # Failed from the third try on, and still queued: scanned once clamd is back.
    assert states == [ScanState.PENDING, ScanState.PENDING, ScanState.FAILED, ScanState.FAILED]


def test_a_rescan_keeps_a_clean_file_served_until_its_new_verdict(alice, make_file):
    stored = make_file(alice)
    set_state(stored, ScanState.CLEAN)
    StoredFile.objects.filter(pk=stored.pk).update(scan_attempts=3)
    infected = make_file(alice, "bad.txt")
    set_state(infected, ScanState.INFECTED)
    assert queue_rescan(StoredFile.objects.all(), timezone.now()) == 1
    stored.refresh_from_db()
    assert stored.scan_state == ScanState.CLEAN
    assert stored.scan_due_at is not None
    assert stored.scan_attempts == 0
    assert share_of(stored).reserve_bytes(first=0, end=stored.size) is not None
