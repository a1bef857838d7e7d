"""Resumable uploads and storage quotas: an upload sets its whole length
aside when it is created (so a client learns at once that the file will not
fit), the space turns into the file's when it finishes, and termination or
removal gives it back, once."""

import pytest
from rest_framework.test import APIClient

from sharing.models import SharingPolicy, StorageAccount, StoredFile
from tests.helpers import in_threads
from tests.test_uploads_support import create, new_upload, patch, upload_id
from uploads.models import Upload, partial_dir, remove_upload

pytestmark = pytest.mark.django_db


@pytest.fixture
def quota_of_100():
    SharingPolicy.objects.update_or_create(pk=SharingPolicy.SINGLETON_ID, defaults={"default_quota_bytes": 100})


def account(user) -> StorageAccount:
    return StorageAccount.objects.get(pk=user.pk)


def test_an_upload_that_cannot_fit_is_refused_at_creation(alice, alice_client, quota_of_100):
    response = create(alice_client, 150)
    assert response.status_code == 413
    assert response.json()["detail"].startswith("Not enough storage: this file needs 150\xa0bytes, and 100\xa0bytes")
    assert not Upload.objects.exists()
    assert list(partial_dir().glob("*")) == []  # no partial file was left behind


def test_the_space_is_set_aside_then_becomes_the_files(alice, alice_client, quota_of_100):
    path = new_upload(alice_client, 60, filename="a.bin")
    assert (account(alice).used_bytes, account(alice).reserved_bytes) == (0, 60)
    assert create(alice_client, 50).status_code == 413  # 60 set aside + 50 > 100
    assert patch(alice_client, path, 0, b"a" * 60).status_code == 204
    assert StoredFile.objects.get().size == 60
    assert (account(alice).used_bytes, account(alice).reserved_bytes) == (60, 0)


def test_termination_gives_the_space_back(alice, alice_client, quota_of_100):
    path = new_upload(alice_client, 80)
    assert create(alice_client, 30).status_code == 413
    assert alice_client.delete(path, HTTP_TUS_RESUMABLE="1.0.0").status_code == 204
    assert account(alice).reserved_bytes == 0
    assert create(alice_client, 30).status_code == 201


def test_removing_an_upload_twice_gives_its_space_back_once(alice, alice_client, django_capture_on_commit_callbacks):
    first, second = new_upload(alice_client, 30), new_upload(alice_client, 40)
    upload = Upload.objects.get(pk=upload_id(first))
    with django_capture_on_commit_callbacks(execute=True):
        remove_upload(upload)
        remove_upload(upload)
    assert account(alice).reserved_bytes == 40  # the second upload's still set aside
    assert Upload.objects.filter(pk=upload_id(second)).exists()


@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_creations_set_aside_exactly_the_quota(alice, quota_of_100):
    def create_one():
        client = APIClient()
        client.force_authenticate(alice)
        return create(client, 10).status_code

    statuses = in_threads(create_one, 20)
    assert sorted(statuses) == [201] * 10 + [413] * 10
    assert Upload.objects.count() == 10
    assert account(alice).reserved_bytes == 100
