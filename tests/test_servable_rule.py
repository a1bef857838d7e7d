"""The one servable rule (sharing.models.state), asked at the exact deadline
by every path that asks it: a share serves until its deadline, exclusive,
to the microsecond, whichever form of the rule (Q, SQL, Python) decides.

The time that decides is pinned with freezegun, so "now" is the deadline
itself and not a moment that merely happens to fall near it."""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from freezegun import freeze_time

from sharing.models import Share, expire_shares
from sharing.models.state import due_q, due_sql, sendable_q, sendable_sql, servable_sql

TICK = timedelta(microseconds=1)


@pytest.fixture
def deadline():
    return (timezone.now() + timedelta(hours=1)).replace(microsecond=123456)


def share_until(stored, deadline, **options) -> Share:
    return Share.create_for(file=stored, expires_at=deadline, **options)


@pytest.mark.parametrize("offset", [-TICK, timedelta(0), TICK])
def test_the_rule_in_python_in_the_orm_and_in_sql_agree_around_the_deadline(shared_file, deadline, offset):
    share = share_until(shared_file, deadline)
    now = deadline + offset
    in_python = share.is_servable(now)
    in_orm = Share.objects.servable(now).filter(pk=share.pk).exists()
    condition, params = servable_sql(connection, now)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM sharing_share WHERE id = %s AND {condition}", [share.pk, *params])
        in_sql = cursor.fetchone()[0] == 1
    assert in_python is in_orm is in_sql is (offset < timedelta(0))


def test_a_limited_link_is_counted_a_microsecond_before_its_deadline(shared_file, deadline):
    share = share_until(shared_file, deadline, max_downloads=5)
    with freeze_time(deadline - TICK):
        assert share.count_download()


def test_a_limited_link_is_not_counted_at_its_deadline(shared_file, deadline):
    share = share_until(shared_file, deadline, max_downloads=5)
    with freeze_time(deadline):
        assert not share.count_download()
        assert share.reserve_bytes(first=0, end=10) is None
    share.refresh_from_db()
    assert share.download_count == 0


def test_an_unlimited_link_is_counted_a_microsecond_before_its_deadline(shared_file, deadline):
    share = share_until(shared_file, deadline)
    with freeze_time(deadline - TICK):
        assert share.reserve_bytes(first=0, end=10) is not None


def test_an_unlimited_link_is_not_counted_at_its_deadline(shared_file, deadline):
    share = share_until(shared_file, deadline)
    with freeze_time(deadline):
        assert share.reserve_bytes(first=0, end=10) is None
    assert share.total_downloads == 0


def test_a_download_is_not_resumed_at_the_deadline(shared_file, deadline):
    share = share_until(shared_file, deadline, max_downloads=5)
    with freeze_time(deadline - timedelta(seconds=1)):
        assert share.reserve_bytes(first=0, end=5) is not None
    with freeze_time(deadline - TICK):
        assert share.reserve_bytes(first=6, end=10) is not None
    with freeze_time(deadline):
        assert share.reserve_bytes(first=8, end=13) is None


def test_a_link_at_its_download_limit_sends_no_range_at_its_deadline(shared_file, deadline):
    """Ended by its limit, a link may finish a started download within its
    budget (sendable_sql), but only until its deadline, exclusive."""
    share = share_until(shared_file, deadline, max_downloads=1)
    with freeze_time(deadline - timedelta(seconds=1)):
        started = share.reserve_bytes(first=0, end=shared_file.size)
        started.settle(10)  # the client left after 10 bytes
        assert share.count_download() is False  # no whole copy left...
    share.refresh_from_db()
    assert (share.status, share.end_reason) == ("expired", "download_limit")
    with freeze_time(deadline - TICK):
        assert share.reserve_bytes(first=10, end=12) is not None  # ...but the rest may still go
    with freeze_time(deadline):
        assert share.reserve_bytes(first=12, end=14) is None


def test_a_share_is_expired_at_its_deadline_not_a_microsecond_before(shared_file, deadline):
    share = share_until(shared_file, deadline)
    assert expire_shares([share.pk], deadline - TICK) == []
    assert expire_shares([share.pk], deadline) == [share.pk]


def test_the_public_link_refuses_at_the_deadline(client, shared_file, deadline):
    share = share_until(shared_file, deadline)
    with freeze_time(deadline - TICK):
        assert client.get(f"/s/{share.token}").status_code == 200
    with freeze_time(deadline):
        assert client.get(f"/s/{share.token}").status_code == 410


def test_a_used_up_link_still_marked_active_answers_no_instead_of_breaking_its_constraint(shared_file, deadline):
    share = share_until(shared_file, deadline, max_downloads=2)
    Share.objects.filter(pk=share.pk).update(bytes_left=0)  # active, yet nothing left
    share.refresh_from_db()
    assert share.status == Share.Status.ACTIVE
    assert not share.count_download()
    assert share.reserve_bytes(first=0, end=10) is None
    assert share.reserve_bytes(first=5, end=6) is None
    share.refresh_from_db()
    assert (share.status, share.bytes_left, share.download_count) == (Share.Status.ACTIVE, 0, 0)


@pytest.mark.parametrize("offset", [-TICK, timedelta(0), TICK])
def test_it_is_due_from_its_deadline_in_the_orm_in_sql_and_in_the_lists(shared_file, deadline, offset):
    share = share_until(shared_file, deadline)
    now = deadline + offset
    in_orm = Share.objects.filter(due_q(now), pk=share.pk).exists()
    condition, params = due_sql(connection, now)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM sharing_share WHERE id = %s AND {condition}", [share.pk, *params])
        in_sql = cursor.fetchone()[0] == 1
    listed_expired = Share.objects.with_effective_status("expired", now).filter(pk=share.pk).exists()
    listed_active = Share.objects.with_effective_status("active", now).filter(pk=share.pk).exists()
    assert in_orm is in_sql is listed_expired is (offset >= timedelta(0))
    assert listed_active is (offset < timedelta(0))


def ended_by_its_limit(stored, deadline) -> Share:
    share = share_until(stored, deadline, max_downloads=1)
    with freeze_time(deadline - timedelta(seconds=1)):
        assert share.count_download()
    share.refresh_from_db()
    assert (share.status, share.end_reason) == ("expired", "download_limit")
    return share


@pytest.mark.parametrize("offset", [-TICK, timedelta(0), TICK])
def test_it_may_send_after_its_limit_until_its_deadline_in_the_orm_and_in_sql(shared_file, deadline, offset):
    share = ended_by_its_limit(shared_file, deadline)
    now = deadline + offset
    in_orm = Share.objects.filter(sendable_q(now), pk=share.pk).exists()
    condition, params = sendable_sql(connection, now)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM sharing_share WHERE id = %s AND {condition}", [share.pk, *params])
        in_sql = cursor.fetchone()[0] == 1
    assert in_orm is in_sql is (offset < timedelta(0))


def test_it_unshares_a_link_ended_by_its_limit_only_before_its_deadline(shared_file, make_file, deadline):
    at_deadline = ended_by_its_limit(shared_file, deadline)
    with freeze_time(deadline):
        assert at_deadline.unshare() is False  # it can send nothing more: nothing to end
    assert (at_deadline.status, at_deadline.end_reason) == ("expired", "download_limit")
    before = ended_by_its_limit(make_file(shared_file.owner, name="other.txt"), deadline)
    with freeze_time(deadline - TICK):
        assert before.unshare() is True
    assert (before.status, before.end_reason) == ("unshared", "unshared")
