"""Strangers racing through upload requests, in threads with their own
database connections (as separate processes would have): the unfinished
uploads a request and an owner take at once, and the half of the owner's
free space that strangers may hold through a request without a byte limit,
are never passed, however many start at once; the refused leave nothing."""

import pytest

from sharing.models import SharingPolicy, StorageAccount
from tests.helpers import in_threads
from tests.test_collect_api import make_request
from tests.test_collect_race import create_through, places
from uploads.models import Upload, partial_dir

pytestmark = pytest.mark.django_db(transaction=True)


def account(user) -> StorageAccount:
    return StorageAccount.objects.get(pk=user.pk)


def test_twelve_uploaders_racing_for_four_unfinished_places_make_four(settings, alice, alice_client):
    settings.REQUEST_UNFINISHED_UPLOADS = 4
    made = make_request(alice_client)
    statuses = in_threads(lambda: create_through(made, 10), 12)
    assert sorted(statuses) == [201] * 4 + [429] * 8
    assert places(made) == (4, 40)
    assert Upload.objects.count() == 4
    assert len(list(partial_dir().glob("*"))) == 4
    assert (account(alice).reserved_bytes, account(alice).strangers_uploads) == (40, 4)


def test_twelve_uploaders_over_two_requests_racing_for_an_owners_five_make_five(settings, alice, alice_client):
    settings.REQUEST_UNFINISHED_UPLOADS_PER_OWNER = 5
    requests = [make_request(alice_client), make_request(alice_client, max_bytes=1000)]
    statuses = in_threads(lambda n: create_through(requests[n % 2], 10), 12, numbered=True)
    assert sorted(statuses) == [201] * 5 + [429] * 7
    assert places(requests[0])[0] + places(requests[1])[0] == 5
    assert Upload.objects.count() == 5
    assert len(list(partial_dir().glob("*"))) == 5
    assert (account(alice).reserved_bytes, account(alice).strangers_uploads) == (50, 5)


def test_twenty_uploaders_racing_for_the_owners_space_take_no_more_than_half(alice, alice_client):
    SharingPolicy.objects.update_or_create(pk=SharingPolicy.SINGLETON_ID, defaults={"default_quota_bytes": 100})
    made = make_request(alice_client)  # no byte limit: strangers get half of what is free
    statuses = in_threads(lambda: create_through(made, 10), 20)
    assert sorted(statuses) == [201] * 5 + [413] * 15
    assert (account(alice).reserved_bytes, account(alice).strangers_reserved_bytes) == (50, 50)
    assert places(made) == (5, 50)
    assert Upload.objects.count() == 5
