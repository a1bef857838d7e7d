"""Download limits as byte budgets, and link passwords, on the model."""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from sharing.models import Download, Share, ShareEvent, byte_budget, reactivate
from sharing.signals import share_downloaded, share_ended
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
    assert (share.status, share.total_downloads) == (Share.Status.ACTIVE, 5)


def test_racing_downloads_win_exactly_the_limit(shared_file):
    share = limited(shared_file, 5)
    results = in_threads(lambda: Share.objects.get(pk=share.pk).count_download(), workers=24)
    assert results.count(True) == 5
    share.refresh_from_db()
    assert (share.download_count, share.status, share.end_reason) == (5, "expired", "download_limit")


def test_the_database_refuses_a_budget_below_zero_or_a_limit_without_one(shared_file):
    share = limited(shared_file, 1)
    with pytest.raises(IntegrityError), transaction.atomic():
        Share.objects.filter(pk=share.pk).update(bytes_left=-1)
    with pytest.raises(IntegrityError), transaction.atomic():
        Share.objects.filter(pk=share.pk).update(bytes_left=None)
    with pytest.raises(IntegrityError), transaction.atomic():
        Share.objects.filter(pk=share.pk).update(max_downloads=0)
    unlimited = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1))
    with pytest.raises(IntegrityError), transaction.atomic():
        Share.objects.filter(pk=unlimited.pk).update(bytes_left=100)


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


# --- the byte budget ---------------------------------------------------------------


def big_file(alice, make_file, size=4000):
    return make_file(alice, name="big.bin", data=bytes(range(256)) * (size // 256) + b"x" * (size % 256))


def fresh(share: Share) -> Share:
    share.refresh_from_db()
    return share


def test_the_budget_is_the_limit_in_copies_plus_a_quarter_of_the_file(alice, make_file):
    share = limited(big_file(alice, make_file), 3)
    assert share.budget == byte_budget(3, 4000) == 3 * 4000 + 1000
    assert (share.bytes_left, share.downloads_left) == (13000, 3)


def test_a_client_that_read_a_little_does_not_cost_the_next_one_a_copy(alice, make_file):
    share = limited(big_file(alice, make_file), 1)
    reservation = share.reserve_bytes(first=0, end=4000)
    assert fresh(share).bytes_left == 1000
    assert share.reserve_bytes(first=0, end=4000) is None  # the bytes are held while it sends
    reservation.settle(600)  # the client hung up after 600 bytes
    assert (fresh(share).bytes_left, share.downloads_left, share.bytes_reserved) == (4400, 1, 0)
    assert share.status == Share.Status.ACTIVE
    assert share.count_download()  # the next client gets its whole copy
    assert (fresh(share).status, share.download_count) == (Share.Status.EXPIRED, 2)


def test_a_crash_gives_nothing_back_and_the_link_reads_used_up(alice, make_file):
    share = limited(big_file(alice, make_file), 1)
    assert share.reserve_bytes(first=0, end=4000) is not None  # never settled: the process died
    share = fresh(share)
    assert (share.status, share.bytes_left, share.bytes_reserved) == (Share.Status.ACTIVE, 1000, 4000)
    assert share.fate().state == "download_limit"  # no whole copy left, though nothing recorded the end
    assert share.reserve_bytes(first=0, end=4000) is None
    assert share.reserve_bytes(first=3000, end=4000) is not None  # a resume the budget holds


def test_the_share_ends_when_its_last_sending_response_settles(alice, make_file):
    share = limited(big_file(alice, make_file), 1)
    head = share.reserve_bytes(first=0, end=2000)
    tail = share.reserve_bytes(first=2000, end=4000)  # a parallel connection
    tail.settle(4000)
    assert (fresh(share).status, share.bytes_reserved) == (Share.Status.ACTIVE, 2000)  # head still sends
    head.settle(2000)
    assert (fresh(share).status, share.end_reason) == (Share.Status.EXPIRED, Share.EndReason.DOWNLOAD_LIMIT)
    assert share.ended_at is not None


def test_a_link_that_ended_by_its_limit_still_finishes_within_its_budget(alice, make_file):
    share = limited(big_file(alice, make_file), 1)
    share.reserve_bytes(first=0, end=4000).settle(3500)  # broke 500 bytes before the end
    assert (fresh(share).status, share.bytes_left) == (Share.Status.EXPIRED, 1500)
    assert share.reserve_bytes(first=3000, end=4000) is not None  # re-asks what sat in buffers
    assert share.reserve_bytes(first=3000, end=4000) is None  # 500 left: not that again
    assert fresh(share).download_count == 1


def test_a_response_sending_across_a_reactivation_gives_back_into_the_new_budget(alice, make_file):
    share = limited(big_file(alice, make_file), 1)
    slow = share.reserve_bytes(first=0, end=4000)  # still sending...
    share.unshare()
    reactivate(share, timezone.now() + timedelta(hours=1), reset_downloads=True)
    assert (fresh(share).bytes_left, share.bytes_reserved) == (5000 - 4000, 4000)  # ...so its hold stays
    slow.settle(1000)
    assert (fresh(share).bytes_left, share.bytes_reserved) == (4000, 0)  # never more than the budget


def test_it_stays_live_while_its_budget_holds_exactly_one_copy(alice, make_file):
    # A quarter of 3 bytes is no resend allowance: after the first of two
    # downloads the budget holds exactly one copy, and nothing is reserved.
    share = limited(make_file(alice, name="abc.txt", data=b"abc"), 2)
    assert share.bytes_left == 6
    assert share.count_download()
    share = fresh(share)
    assert (share.bytes_left, share.bytes_reserved, share.downloads_left) == (3, 0, 1)
    assert (share.status, share.end_reason) == (Share.Status.ACTIVE, "")
    assert share.fate().state == "live"
    listed = Share.objects.with_effective_status(Share.Status.ACTIVE, timezone.now()).filter(pk=share.pk)
    assert listed.exists()  # the lists' form of the rule (used_up_q) agrees
    assert share.count_download()  # the copy it held
    assert (fresh(share).status, share.end_reason) == (Share.Status.EXPIRED, Share.EndReason.DOWNLOAD_LIMIT)
    assert (share.bytes_left, share.download_count) == (0, 2)


def test_racing_ranges_never_take_more_than_the_budget(alice, make_file):
    share = limited(big_file(alice, make_file), 1)
    ranges = [(offset, min(offset + 700, 4000)) for offset in range(0, 4000, 300)] * 3

    pending = list(ranges)

    def take():
        first, end = pending.pop()  # one range per thread (list.pop is atomic)
        reservation = Share.objects.get(pk=share.pk).reserve_bytes(first=first, end=end)
        return 0 if reservation is None else end - first

    taken = in_threads(take, workers=len(ranges))
    assert 5000 - 700 < sum(taken) <= 5000
    assert fresh(share).bytes_left == 5000 - sum(taken)


def test_a_new_limit_keeps_what_was_used(alice, make_file):
    share = limited(big_file(alice, make_file), 2)
    share.reserve_bytes(first=0, end=4000).settle(4000)
    assert share.change(max_downloads=3)
    assert (share.bytes_left, share.downloads_left) == (13000 - 4000, 2)
    unlimited = Share.create_for(file=share.file, expires_at=timezone.now() + timedelta(hours=1))
    for _ in range(2):
        assert unlimited.count_download()
    assert unlimited.change(max_downloads=3)  # each download it counted was a whole copy
    assert (unlimited.bytes_left, unlimited.downloads_left) == (13000 - 8000, 1)


def test_an_empty_file_counts_responses(alice, make_file):
    share = limited(make_file(alice, name="empty.txt", data=b""), 2)
    assert share.bytes_left == 2
    assert share.count_download()
    assert share.count_download()
    assert not share.count_download()
    assert (fresh(share).status, share.download_count) == (Share.Status.EXPIRED, 2)


def test_it_lists_an_empty_files_link_as_active_while_one_response_is_left(alice, make_file):
    share = limited(make_file(alice, name="empty.txt", data=b""), 2)
    assert share.count_download()
    active = Share.objects.with_effective_status(Share.Status.ACTIVE, timezone.now())
    assert (fresh(share).bytes_left, active.filter(pk=share.pk).exists()) == (1, True)
    assert share.count_download()
    assert not active.filter(pk=share.pk).exists()


def test_a_refused_download_records_nothing(shared_file):
    share = limited(shared_file, 1)
    assert share.reserve_bytes(first=0, end=SIZE) is not None
    assert share.reserve_bytes(first=0, end=SIZE) is None
    assert fresh(share).download_count == 1
    assert share.events.filter(kind="downloaded").count() == 1
    assert not Download.objects.filter(share=share).exists()  # the exact path counts in the row


def test_it_takes_a_new_limit_that_leaves_exactly_nothing_to_send(alice, make_file):
    # A 3-byte file has no resend allowance: after one copy, a limit of one
    # leaves a budget of exactly 0 bytes, which is allowed and ends the link.
    share = limited(make_file(alice, name="abc.txt", data=b"abc"), 2)
    assert share.count_download()
    assert share.change(max_downloads=1)
    assert (fresh(share).bytes_left, share.status, share.end_reason) == (
        0,
        Share.Status.EXPIRED,
        Share.EndReason.DOWNLOAD_LIMIT,
    )


def test_it_records_the_limit_reached_once_when_the_last_copy_settles(shared_file):
    share = limited(shared_file, 2)
    ended = []

    def listener(sender, file_ids, **kwargs):
        ended.append(file_ids)

    share_ended.connect(listener)
    try:
        assert share.count_download()
        assert not share.events.filter(kind=ShareEvent.Kind.DOWNLOAD_LIMIT_REACHED).exists()
        assert ended == []
        assert share.count_download()
    finally:
        share_ended.disconnect(listener)
    assert share.events.filter(kind=ShareEvent.Kind.DOWNLOAD_LIMIT_REACHED).count() == 1
    assert ended == [[shared_file.pk]]


@pytest.mark.parametrize("max_downloads", [None, 2])
def test_it_names_the_file_a_download_sent_in_its_history(shared_file, max_downloads):
    share = Share.create_for(
        file=shared_file, expires_at=timezone.now() + timedelta(hours=1), max_downloads=max_downloads
    )
    assert share.count_download()
    assert share.events.get(kind=ShareEvent.Kind.DOWNLOADED).details == {"file": shared_file.pk}


def test_it_counts_a_link_read_with_a_limit_in_its_row_even_once_the_limit_is_lifted(shared_file):
    share = limited(shared_file, 2)
    Share.objects.get(pk=share.pk).change(max_downloads=None)
    assert share.count_download()  # the instance in hand still has its limit
    assert (fresh(share).download_count, share.max_downloads) == (1, None)
    assert not Download.objects.filter(share=share).exists()  # the exact way, not the quick one


def test_it_asks_for_the_first_download_notice_only_after_a_response_from_byte_0(shared_file):
    heard = []

    def listener(sender, share_id, **kwargs):
        heard.append(share_id)

    share = Share.create_for(
        file=shared_file, expires_at=timezone.now() + timedelta(hours=1), max_downloads=3, notify_first_download=True
    )
    share_downloaded.connect(listener)
    try:
        share.reserve_bytes(first=5, end=SIZE).settle(SIZE)  # a resume is no download
        assert heard == []
        share.reserve_bytes(first=0, end=SIZE).settle(SIZE)
    finally:
        share_downloaded.disconnect(listener)
    assert heard == [share.pk]
