"""Download limits, resume bookkeeping and link passwords on the model."""

import time
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from freezegun import freeze_time

from sharing.models import MAX_FREE_RESUMES, Download, Share, resume_slack
from tests.helpers import in_threads

pytestmark = pytest.mark.django_db(transaction=True)

SIZE = 13  # bytes of the shared_file fixture ("hello, world\n")


def limited(shared_file, k: int, seconds: float = 3600) -> Share:
    return Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(seconds=seconds), max_downloads=k)


def test_the_download_that_uses_the_last_allowance_ends_the_share(shared_file):
    share = limited(shared_file, 2)
    assert share.downloads_left == 2
    assert share.count_download()
    share.refresh_from_db()
    assert (share.status, share.downloads_left) == (Share.Status.ACTIVE, 1)
    assert share.count_download()
    share.refresh_from_db()
    assert (share.status, share.end_reason) == (Share.Status.EXPIRED, Share.EndReason.DOWNLOAD_LIMIT)
    assert share.ended_at is not None
    assert share.downloads_left == 0
    assert share.lateness is None  # lateness is for time expiry only
    assert not share.count_download()
    share.refresh_from_db()
    assert share.download_count == 2


def test_unlimited_shares_keep_counting(shared_file):
    share = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1))
    assert share.downloads_left is None
    assert all(share.count_download() for _ in range(5))
    share.refresh_from_db()
    assert (share.status, share.download_count) == (Share.Status.ACTIVE, 5)


def test_racing_downloads_win_exactly_the_limit(shared_file):
    share = limited(shared_file, 5)
    results = in_threads(lambda: Share.objects.get(pk=share.pk).count_download(), workers=24)
    assert results.count(True) == 5
    share.refresh_from_db()
    assert (share.download_count, share.status, share.end_reason) == (5, "expired", "download_limit")


def test_the_database_refuses_a_count_beyond_the_limit(shared_file):
    share = limited(shared_file, 1)
    with pytest.raises(IntegrityError), transaction.atomic():
        Share.objects.filter(pk=share.pk).update(download_count=2)
    with pytest.raises(IntegrityError), transaction.atomic():
        Share.objects.filter(pk=share.pk).update(max_downloads=0)


def test_lowering_the_limit_below_the_count_names_the_field(shared_file):
    share = limited(shared_file, 5)
    for _ in range(3):
        share.count_download()
    with pytest.raises(ValidationError) as caught:
        share.change(max_downloads=2)
    assert "max_downloads" in caught.value.message_dict
    share.refresh_from_db()
    assert share.max_downloads == 5


def test_a_limit_equal_to_the_count_ends_the_share_and_none_lifts_it(shared_file):
    lifted = limited(shared_file, 5)
    lifted.count_download()
    assert lifted.change(max_downloads=None)
    assert lifted.max_downloads is None
    assert lifted.status == Share.Status.ACTIVE

    used_up = limited(shared_file, 5)
    used_up.count_download()
    assert used_up.change(max_downloads=1)
    assert (used_up.status, used_up.end_reason) == (Share.Status.EXPIRED, Share.EndReason.DOWNLOAD_LIMIT)


def test_an_ended_share_cannot_be_changed(shared_file):
    share = limited(shared_file, 1)
    share.count_download()
    assert not share.change(max_downloads=10)
    assert not share.change(password="new")
    share.refresh_from_db()
    assert (share.max_downloads, share.password_hash) == (1, "")


def test_passwords_are_stored_hashed_and_can_be_removed(shared_file):
    share = Share.create_for(
        file=shared_file, expires_at=timezone.now() + timedelta(hours=1), password="s3cret \u00e9\u2603"
    )
    assert share.has_password
    assert "s3cret" not in share.password_hash
    assert share.check_password("s3cret \u00e9\u2603")
    assert not share.check_password("s3cret")
    assert share.change(password="other")
    assert share.check_password("other")
    assert not share.check_password("s3cret \u00e9\u2603")
    assert share.change(password="")
    assert not share.has_password
    assert not share.check_password("")


# --- resume bookkeeping ---------------------------------------------------------


def big_file(alice, make_file, size=4000):
    return make_file(alice, name="big.bin", data=bytes(range(256)) * (size // 256) + b"x" * (size % 256))


def test_a_resume_is_free_only_forward_and_only_for_what_was_lost(alice, make_file):
    stored = big_file(alice, make_file)
    share = Share.create_for(file=stored, expires_at=timezone.now() + timedelta(hours=1), max_downloads=1)
    download = share.start_download(first_byte=0, end=stored.size)
    assert download is not None
    download.release(first_byte=0, end=stored.size, sent_until=2000)  # the connection broke

    slack = resume_slack(stored.size)
    assert not share.resume_download(download.pk, first_byte=2000 - slack - 1, end=stored.size)  # asks back too much
    assert share.resume_download(download.pk, first_byte=1900, end=stored.size)
    assert not share.resume_download(download.pk, first_byte=1900, end=stored.size)  # not the same start twice
    assert not share.resume_download(download.pk, first_byte=1950, end=stored.size)  # 1900- may have been sent whole


def test_a_ticket_allows_a_bounded_number_of_free_resumes(alice, make_file):
    stored = big_file(alice, make_file)
    share = Share.create_for(file=stored, expires_at=timezone.now() + timedelta(hours=1))
    download = share.start_download(first_byte=0, end=stored.size)
    offset = 0
    for _ in range(MAX_FREE_RESUMES):
        download.refresh_from_db()
        Download.objects.get(pk=download.pk).release(
            first_byte=download.resume_from, end=stored.size, sent_until=offset + 10
        )
        offset += 10
        assert share.resume_download(download.pk, first_byte=offset, end=stored.size)
    download.refresh_from_db()
    download.release(first_byte=download.resume_from, end=stored.size, sent_until=offset + 10)
    assert not share.resume_download(download.pk, first_byte=offset + 10, end=stored.size)


def test_resumes_of_a_link_ended_by_its_limit_have_a_grace_hour_but_not_past_the_deadline(alice, make_file):
    stored = big_file(alice, make_file)
    with freeze_time("2026-05-01 10:00:00") as frozen:
        share = Share.create_for(file=stored, expires_at=timezone.now() + timedelta(hours=3), max_downloads=1)
        download = share.start_download(first_byte=0, end=stored.size)
        download.release(first_byte=0, end=stored.size, sent_until=3000)
        share.refresh_from_db()
        assert share.end_reason == Share.EndReason.DOWNLOAD_LIMIT
        frozen.tick(timedelta(minutes=59))
        assert share.resume_download(download.pk, first_byte=3000, end=stored.size)
        download.refresh_from_db()
        download.release(first_byte=3000, end=stored.size, sent_until=3500)
        frozen.tick(timedelta(minutes=2))
        assert not share.resume_download(download.pk, first_byte=3500, end=stored.size)  # the hour is over


@pytest.mark.parametrize("ending", ["unshare", "time"])
def test_no_resume_after_an_unshare_or_the_deadline(alice, make_file, ending):
    stored = big_file(alice, make_file)
    share = Share.create_for(file=stored, expires_at=timezone.now() + timedelta(seconds=0.5))
    download = share.start_download(first_byte=0, end=stored.size)
    download.release(first_byte=0, end=stored.size, sent_until=1000)
    if ending == "unshare":
        share.unshare()
    else:
        time.sleep(0.6)
    assert not share.resume_download(download.pk, first_byte=1000, end=stored.size)


def test_a_ticket_of_another_share_is_worth_nothing(alice, make_file):
    stored = big_file(alice, make_file)
    first = Share.create_for(file=stored, expires_at=timezone.now() + timedelta(hours=1))
    second = Share.create_for(file=stored, expires_at=timezone.now() + timedelta(hours=1))
    download = first.start_download(first_byte=0, end=stored.size)
    download.release(first_byte=0, end=stored.size, sent_until=1000)
    assert not second.resume_download(download.pk, first_byte=1000, end=stored.size)


def test_a_refused_download_records_nothing(shared_file):
    share = limited(shared_file, 1)
    assert share.start_download(first_byte=0, end=SIZE) is not None
    assert share.start_download(first_byte=0, end=SIZE) is None
    assert Download.objects.filter(share=share).count() == 1
