"""The migration that brings storage accounts starts each owner's at what
their files already take, on a real database."""

import pytest
from django.utils import timezone

from tests.migrating import back_to_the_latest_schema, migrate  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("back_to_the_latest_schema")]


def test_accounts_start_at_what_files_take(alice, bob, admin_user):
    old = migrate([("sharing", "0009_file_crc32")])
    try:
        stored_file = old.get_model("sharing", "StoredFile")
        for owner, size in ((alice, 100), (alice, 23), (bob, 5)):
            stored_file.objects.create(
                owner_id=owner.pk, name="f", content="f", size=size, sha256="0" * 64, created_at=timezone.now()
            )
    finally:
        new = migrate([("sharing", "0010_storage_quotas")])
    accounts = dict(new.get_model("sharing", "StorageAccount").objects.values_list("user_id", "used_bytes"))
    assert accounts == {alice.pk: 123, bob.pk: 5}  # no files, no account yet (made on first use)
