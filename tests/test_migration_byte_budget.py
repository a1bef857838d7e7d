"""The migration to byte budgets, run on a real database: shares counted the
old way get the budget their limit and count leave, and the old history's
free resumes become `resumed` events."""

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.migrating import back_to_the_latest_schema, migrate  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("back_to_the_latest_schema")]

BEFORE = [("sharing", "0006_download_pending")]
AFTER = [("sharing", "0007_byte_budget")]


def test_old_limits_become_budgets_and_free_resumes_become_resumed_events(alice):
    old = migrate(BEFORE)
    try:
        stored_file = old.get_model("sharing", "StoredFile")
        share_model = old.get_model("sharing", "Share")
        event_model = old.get_model("sharing", "ShareEvent")
        now = timezone.now()
        big = stored_file.objects.create(
            owner_id=alice.pk, name="big.bin", content="big.bin", size=4000, sha256="0" * 64, created_at=now
        )
        empty = stored_file.objects.create(
            owner_id=alice.pk, name="empty.txt", content="empty.txt", size=0, sha256="1" * 64, created_at=now
        )

        def share(stored, **fields):
            return share_model.objects.create(
                file_id=stored.pk,
                owner_id=alice.pk,
                token=f"t{share_model.objects.count()}",
                created_at=now,
                updated_at=now,
                expires_at=now + timedelta(hours=1),
                **fields,
            )

        limited = share(big, max_downloads=3, download_count=1)
        used_up = share(big, max_downloads=2, download_count=2)
        tiny = share(empty, max_downloads=2, download_count=0)
        unlimited = share(big, download_count=7)
        counted = event_model.objects.create(share_id=limited.pk, kind="downloaded", at=now, bytes=4000, resumed=False)
        free = event_model.objects.create(share_id=limited.pk, kind="downloaded", at=now, bytes=500, resumed=True)
    finally:
        new = migrate(AFTER)

    shares = new.get_model("sharing", "Share").objects
    assert shares.get(pk=limited.pk).bytes_left == 2 * 4000 + 1000  # two copies left, and the allowance
    assert shares.get(pk=used_up.pk).bytes_left == 1000  # no whole copy: only the allowance
    assert shares.get(pk=tiny.pk).bytes_left == 2  # an empty file: one unit per response
    assert shares.get(pk=unlimited.pk).bytes_left is None
    events = new.get_model("sharing", "ShareEvent").objects
    assert events.get(pk=counted.pk).kind == "downloaded"
    assert events.get(pk=free.pk).kind == "resumed"
