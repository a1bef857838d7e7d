"""The migration to shares of several files, run on a real database (both
ways, with rows in place): every share keeps its file as its one item, with
its size as one copy's and its smallest file's; back again, each share gets
its first file back."""

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.migrating import back_to_the_latest_schema, migrate  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("back_to_the_latest_schema")]

BEFORE = [("sharing", "0010_storage_quotas")]
AFTER = [("sharing", "0013_remove_share_file")]


def test_each_share_keeps_its_file_as_its_one_item_and_gets_it_back_going_backwards(alice):
    old = migrate(BEFORE)
    try:
        stored_file = old.get_model("sharing", "StoredFile")
        share_model = old.get_model("sharing", "Share")
        now = timezone.now()
        report = stored_file.objects.create(
            owner_id=alice.pk, name="report.txt", content="r", size=4000, sha256="0" * 64, created_at=now
        )

        def share(file_id, **fields):
            return share_model.objects.create(
                file_id=file_id,
                owner_id=alice.pk,
                token=f"t{share_model.objects.count()}",
                created_at=now,
                updated_at=now,
                expires_at=now + timedelta(hours=1),
                **fields,
            )

        kept = share(report.pk, max_downloads=2, bytes_left=9000)
        orphan = share(None, status="unshared", end_reason="file_deleted", ended_at=now)
    finally:
        new = migrate(AFTER)

    shares = new.get_model("sharing", "Share").objects
    items = new.get_model("sharing", "ShareItem").objects
    assert list(items.values_list("share_id", "file_id", "position")) == [(kept.pk, report.pk, 1)]
    assert (shares.get(pk=kept.pk).size, shares.get(pk=kept.pk).least) == (4000, 4000)
    assert not items.filter(share_id=orphan.pk).exists()
    second = new.get_model("sharing", "StoredFile").objects.create(
        owner_id=alice.pk, name="b.txt", content="b", size=10, sha256="1" * 64, created_at=now
    )
    items.create(share_id=kept.pk, file_id=second.pk, position=2)

    back = migrate(BEFORE)
    shares = back.get_model("sharing", "Share").objects
    assert shares.get(pk=kept.pk).file_id == report.pk  # its first file
    assert shares.get(pk=orphan.pk).file_id is None
