"""The share rules on the models, below the API."""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from sharing.models import Share, SharingPolicy, delete_file


@pytest.fixture
def share(alice, make_file):
    return Share.create_for(file=make_file(alice), expires_at=timezone.now() + timedelta(hours=1))


def test_deleting_a_user_removes_their_files_bytes_after_commit(alice, make_file, django_capture_on_commit_callbacks):
    stored = make_file(alice)
    storage, path = stored.content.storage, stored.content.name
    assert storage.exists(path)
    with django_capture_on_commit_callbacks(execute=True):
        alice.delete()
    assert not storage.exists(path)


def test_a_rolled_back_delete_keeps_the_bytes(alice, make_file):
    stored = make_file(alice)
    storage, path = stored.content.storage, stored.content.name

    def delete_then_fail():
        with transaction.atomic():
            delete_file(stored)
            raise RuntimeError("abort")

    with pytest.raises(RuntimeError):
        delete_then_fail()
    assert storage.exists(path)


def test_deleting_a_file_unshares_its_active_shares_only(share, django_capture_on_commit_callbacks):
    ended = Share.create_for(file=share.file, expires_at=timezone.now() + timedelta(hours=1))
    ended.unshare()
    with django_capture_on_commit_callbacks(execute=True):
        assert delete_file(share.file) == 1
    share.refresh_from_db()
    ended.refresh_from_db()
    assert (share.status, share.end_reason, share.file) == ("unshared", "file_deleted", None)
    assert ended.end_reason == "unshared"


def test_only_one_of_two_racing_unshares_wins(share):
    twin = Share.objects.get(pk=share.pk)
    assert share.unshare() is True
    assert twin.unshare() is False
    assert twin.status == "unshared"


def test_an_ended_share_cannot_be_renewed(share):
    share.unshare()
    assert share.set_expiry(timezone.now() + timedelta(days=1)) is False
    assert share.status == "unshared"


def test_a_share_past_its_deadline_is_not_renewed_or_counted(share):
    past = timezone.now() - timedelta(seconds=1)
    Share.objects.filter(pk=share.pk).update(created_at=past - timedelta(hours=1), expires_at=past)
    share.refresh_from_db()
    assert share.effective_status() == "expired"
    assert share.set_expiry(timezone.now() + timedelta(days=1)) is False
    assert share.count_download() is False


def test_the_database_refuses_a_state_without_its_end(share):
    with pytest.raises(IntegrityError), transaction.atomic():
        Share.objects.filter(pk=share.pk).update(status="expired")


def test_the_database_refuses_a_deadline_before_creation(share):
    with pytest.raises(IntegrityError), transaction.atomic():
        Share.objects.filter(pk=share.pk).update(expires_at=share.created_at - timedelta(seconds=1))


def test_tokens_are_long_and_unique(alice, make_file):
    stored = make_file(alice)
    tokens = {Share.create_for(file=stored, expires_at=timezone.now() + timedelta(1)).token for _ in range(50)}
    assert len(tokens) == 50
    assert all(len(token) >= 43 for token in tokens)  # 256 bits of base64


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"expires_in": 10, "expires_at": "x"}, "expires_in"),
        ({"expires_in": 0}, "expires_in"),
        ({"expires_in": True}, "expires_in"),
        ({"expires_in": 31 * 86400}, "expires_in"),
        ({"expires_at": "past"}, "expires_at"),
        ({"expires_at": "far"}, "expires_at"),
    ],
)
def test_policy_names_the_field_it_refuses(db, kwargs, field):
    now = timezone.now()
    values = {"past": now - timedelta(seconds=1), "far": now + timedelta(days=31), "x": now + timedelta(1)}
    kwargs = {key: values.get(value, value) if isinstance(value, str) else value for key, value in kwargs.items()}
    with pytest.raises(ValidationError) as error:
        SharingPolicy.current().resolve_expires_at(now=now, **kwargs)
    assert field in error.value.message_dict


def test_policy_defaults_without_a_row_and_follows_the_row(db):
    now = timezone.now()
    assert SharingPolicy.current().resolve_expires_at(now=now) == now + timedelta(days=7)
    SharingPolicy.objects.create(default_lifetime=timedelta(hours=2), max_lifetime=timedelta(days=1))
    assert SharingPolicy.current().resolve_expires_at(now=now) == now + timedelta(hours=2)
    assert SharingPolicy.objects.count() == 1


def test_a_naive_expires_at_is_read_as_utc(db):
    now = timezone.now()
    naive = (now + timedelta(hours=1)).replace(tzinfo=None)
    assert SharingPolicy.current().resolve_expires_at(now=now, expires_at=naive) == now + timedelta(hours=1)


def test_a_deadline_that_passes_while_waiting_for_the_lock_is_refused(alice, make_file):
    stored = make_file(alice)
    with pytest.raises(ValidationError) as error:
        Share.create_for(file=stored, expires_at=timezone.now() - timedelta(microseconds=1))
    assert "expires_at" in error.value.message_dict
    assert not Share.objects.exists()


def test_a_renewal_to_a_passed_deadline_changes_nothing(share):
    before = share.expires_at
    assert share.set_expiry(timezone.now() - timedelta(microseconds=1)) is False
    assert share.expires_at == before
