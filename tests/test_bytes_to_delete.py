"""A deleted file's bytes are never lost track of: recorded in the deletion's
transaction, deleted once it has committed, and kept on record (and retried
by the expiry daemon, with a back-off) while the storage fails to delete
them. The storage here is the real local disk, whose deletes fail on demand
(root ignores a folder's permissions, so a chmod would not make them fail)."""

import errno
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.db import connection, transaction
from django.urls import reverse
from django.utils import timezone
from freezegun import freeze_time

from expiry.housekeeping import Housekeeper
from sharing.models import BytesToDelete, StoredFile, delete_file, retry_deletions
from storage.disk import DurableFileSystemStorage
from tests import buckets
from tests.helpers import in_threads

pytestmark = pytest.mark.django_db(transaction=True)

T0 = datetime(2031, 3, 4, 5, 6, 7, tzinfo=UTC)
PENDING = reverse("admin:sharing_bytestodelete_changelist")


class FlakyStorage(DurableFileSystemStorage):
    """The local disk, whose next `failures` deletes raise OSError (a disk
    error; an unreachable bucket raises its own errors, caught alike)."""

    failures = 0
    deletes: list[str] = []  # every name a delete was asked for

    def delete(self, name):
        FlakyStorage.deletes.append(name)
        if FlakyStorage.failures:
            FlakyStorage.failures -= 1
            raise OSError(errno.EIO, "Input/output error", name)
        super().delete(name)


@pytest.fixture(autouse=True)
def flaky(settings):
    settings.STORAGES = {**settings.STORAGES, "default": {"BACKEND": f"{__name__}.FlakyStorage"}}
    FlakyStorage.failures = 0
    FlakyStorage.deletes = []
    return FlakyStorage


def on_disk(media_root, stored: StoredFile) -> bool:
    return (Path(media_root) / stored.content.name).exists()


def deleted_failing(stored: StoredFile, failures: int = 1) -> BytesToDelete:
    """Delete the file while the storage fails; return the record left."""
    FlakyStorage.failures = failures
    delete_file(stored)
    return BytesToDelete.objects.get(name=stored.content.name)


def make_due() -> None:
    BytesToDelete.objects.update(retry_at=timezone.now())


class Rollback(Exception):
    pass


def test_a_deleted_files_bytes_go_and_leave_no_record(alice, make_file, media_root):
    stored = make_file(alice)
    assert on_disk(media_root, stored)
    delete_file(stored)
    assert FlakyStorage.deletes == [stored.content.name]
    assert not on_disk(media_root, stored)
    assert not BytesToDelete.objects.exists()


def test_a_failed_deletion_keeps_its_record_and_the_bytes(alice, make_file, media_root, caplog):
    stored = make_file(alice)
    FlakyStorage.failures = 1
    with caplog.at_level(logging.WARNING, logger="sharing"):
        delete_file(stored)
    assert not StoredFile.objects.filter(pk=stored.pk).exists()
    assert on_disk(media_root, stored)
    record = BytesToDelete.objects.get()
    assert (record.name, record.attempts) == (stored.content.name, 1)
    assert record.last_error.startswith("OSError: ")
    assert "Input/output error" in record.last_error
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and r.name == "sharing"]
    assert len(warnings) == 1
    assert stored.content.name in warnings[0].getMessage()


def test_a_file_deleted_by_a_cascade_is_recorded_too(alice, make_file, media_root):
    stored = make_file(alice)
    FlakyStorage.failures = 1
    alice.delete()  # its files go with it (the admin's user deletion)
    assert BytesToDelete.objects.get().name == stored.content.name
    assert on_disk(media_root, stored)


def test_a_retry_after_the_failure_clears_deletes_the_bytes_and_the_record(alice, make_file, media_root):
    stored = make_file(alice)
    deleted_failing(stored)
    make_due()
    assert retry_deletions(100) == 1
    assert not on_disk(media_root, stored)
    assert not BytesToDelete.objects.exists()
    assert FlakyStorage.deletes == [stored.content.name] * 2


def test_a_rolled_back_deletion_leaves_the_row_the_bytes_and_no_record(alice, make_file, media_root):
    stored = make_file(alice)
    pk, name = stored.pk, stored.content.name
    recorded = []

    def delete_then_roll_back():
        with transaction.atomic():
            delete_file(stored)
            # Recorded in the deletion's own transaction: once committed,
            # the record stays whatever happens to this process after.
            recorded.append(BytesToDelete.objects.filter(name=name).exists())
            raise Rollback

    with pytest.raises(Rollback):
        delete_then_roll_back()
    assert recorded == [True]
    assert StoredFile.objects.filter(pk=pk).exists()
    assert (Path(media_root) / name).exists()
    assert not BytesToDelete.objects.exists()
    assert FlakyStorage.deletes == []


def test_the_retry_waits_for_the_back_off(alice, make_file, media_root):
    stored = make_file(alice)
    with freeze_time(T0) as frozen:
        record = deleted_failing(stored, failures=2)
        assert record.retry_at == T0 + timedelta(seconds=2)
        frozen.tick(timedelta(seconds=1.9))
        assert retry_deletions(100) == 0
        assert len(FlakyStorage.deletes) == 1  # not tried

        frozen.tick(timedelta(seconds=0.1))
        assert retry_deletions(100) == 0  # tried, and failed again
        assert len(FlakyStorage.deletes) == 2
        record.refresh_from_db()
        assert (record.attempts, record.retry_at) == (2, T0 + timedelta(seconds=2 + 4))

        frozen.tick(timedelta(seconds=3.9))
        assert retry_deletions(100) == 0
        assert len(FlakyStorage.deletes) == 2
        frozen.tick(timedelta(seconds=0.1))
        assert retry_deletions(100) == 1
    assert not on_disk(media_root, stored)
    assert not BytesToDelete.objects.exists()


def test_the_back_off_stops_growing_at_an_hour(alice, make_file):
    record = deleted_failing(make_file(alice))
    BytesToDelete.objects.filter(pk=record.pk).update(attempts=40, retry_at=T0)
    FlakyStorage.failures = 1
    with freeze_time(T0):
        assert retry_deletions(100) == 0
    record.refresh_from_db()
    assert (record.attempts, record.retry_at) == (41, T0 + timedelta(hours=1))


def test_the_first_failure_ends_a_retry_pass_and_does_not_block_the_others(alice, make_file, media_root):
    files = [make_file(alice, name=f"{n}.txt") for n in range(3)]
    first = deleted_failing(files[0])
    for stored in files[1:]:
        deleted_failing(stored)
    BytesToDelete.objects.update(retry_at=timezone.now() - timedelta(seconds=10))
    BytesToDelete.objects.filter(pk=first.pk).update(retry_at=timezone.now() - timedelta(seconds=20))
    FlakyStorage.failures = 1
    tried = len(FlakyStorage.deletes)
    assert retry_deletions(100) == 0
    assert FlakyStorage.deletes[tried:] == [first.name]  # one timeout, not three
    assert retry_deletions(100) == 2  # the failed one waits its back-off
    assert list(BytesToDelete.objects.values_list("name", flat=True)) == [first.name]
    assert [on_disk(media_root, stored) for stored in files] == [True, False, False]


def test_a_name_already_gone_counts_as_deleted(alice, make_file, media_root):
    stored = make_file(alice)
    record = deleted_failing(stored)
    (Path(media_root) / stored.content.name).unlink()
    make_due()
    assert retry_deletions(100) == 1
    assert not BytesToDelete.objects.filter(pk=record.pk).exists()


def test_a_try_claims_its_record_once(alice, make_file):
    record = deleted_failing(make_file(alice))
    make_due()
    mine, theirs = BytesToDelete.objects.get(), BytesToDelete.objects.get()
    assert mine.claim()
    assert not theirs.claim()  # read before the claim: another daemon's copy
    assert BytesToDelete.objects.get(pk=record.pk).attempts == 2


def overtaken_claim(stored) -> tuple[BytesToDelete, BytesToDelete]:
    """A failed deletion of `stored`'s bytes, claimed by a slow try and then,
    its back-off over, by a later one: (slow, later)."""
    deleted_failing(stored)
    make_due()
    slow = BytesToDelete.objects.get()
    assert slow.claim()
    make_due()
    later = BytesToDelete.objects.get()
    assert later.claim()
    return slow, later


def test_a_try_overtaken_by_a_later_claim_leaves_the_record_to_it(alice, make_file, media_root):
    """Only the try that owns the record deletes it: a slow try whose back-off
    ran out meanwhile deletes the bytes but leaves the record to the later
    one, which finds the name gone and deletes it."""
    stored = make_file(alice)
    slow, later = overtaken_claim(stored)
    assert slow.delete_bytes()
    assert not on_disk(media_root, stored)
    assert BytesToDelete.objects.filter(pk=later.pk).exists()
    assert later.delete_bytes()
    assert not BytesToDelete.objects.exists()


def test_a_failed_try_overtaken_by_a_later_one_does_not_bring_the_record_back(alice, make_file, media_root):
    stored = make_file(alice)
    slow, later = overtaken_claim(stored)
    assert later.delete_bytes()
    FlakyStorage.failures = 1
    assert not slow.delete_bytes()
    assert not BytesToDelete.objects.exists()
    assert not on_disk(media_root, stored)


def test_racing_retries_delete_each_record_once(alice, make_file, media_root):
    files = [make_file(alice, name=f"{n}.txt") for n in range(12)]
    for stored in files:
        deleted_failing(stored)
    make_due()
    results = in_threads(lambda: retry_deletions(100), workers=3)
    assert sum(results) == 12
    assert not BytesToDelete.objects.exists()
    assert not any(on_disk(media_root, stored) for stored in files)


@pytest.mark.postgres
def test_postgresql_racing_retries_delete_each_record_once(alice, make_file, media_root):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL")
    test_racing_retries_delete_each_record_once(alice, make_file, media_root)


def purge_pass_only() -> Housekeeper:
    """A housekeeper whose next due work is a purge pass."""
    clock = [1000.0]
    housekeeper = Housekeeper(clock=lambda: clock[0])
    housekeeper.next_sweep = clock[0] + 600
    return housekeeper


def test_the_daemons_housekeeping_retries_the_deletions(alice, make_file, media_root, caplog):
    stored = make_file(alice)
    deleted_failing(stored)
    make_due()
    housekeeper = purge_pass_only()
    with caplog.at_level(logging.INFO, logger="expiry"):
        assert housekeeper.step(room=10)
    assert not on_disk(media_root, stored)
    assert not BytesToDelete.objects.exists()
    assert (housekeeper.deleted_late, housekeeper.errors) == (1, 0)
    assert "deleted the bytes of 1 deleted files on a retry" in caplog.text


def test_a_failing_retry_is_no_housekeeping_error(alice, make_file, media_root):
    stored = make_file(alice)
    deleted_failing(stored)
    make_due()
    FlakyStorage.failures = 1
    housekeeper = purge_pass_only()
    assert housekeeper.step(room=10)
    assert (housekeeper.deleted_late, housekeeper.errors) == (0, 0)
    assert BytesToDelete.objects.get().attempts == 2
    assert on_disk(media_root, stored)


# --- admin ---------------------------------------------------------------------------


def test_the_admin_lists_the_pending_deletions_read_only(admin_client, alice, make_file):
    kept = deleted_failing(make_file(alice, name="a.txt"))
    other = deleted_failing(make_file(alice, name="b.txt"))
    page = admin_client.get(PENDING)
    assert page.status_code == 200
    assert kept.name in page.content.decode()
    assert "OSError: [Errno 5] Input/output error" in page.content.decode()
    found = admin_client.get(PENDING, {"q": other.name[-12:]})
    assert [row.pk for row in found.context["cl"].result_list] == [other.pk]

    assert admin_client.get(reverse("admin:sharing_bytestodelete_add")).status_code == 403
    change = reverse("admin:sharing_bytestodelete_change", args=[kept.pk])
    assert admin_client.get(change).status_code == 200  # shown, not editable
    assert admin_client.post(change, {"name": "x", "attempts": 0}).status_code == 403
    delete = reverse("admin:sharing_bytestodelete_delete", args=[kept.pk])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    assert BytesToDelete.objects.filter(pk=kept.pk, name=kept.name, attempts=1).exists()


# --- a bucket ---------------------------------------------------------------------------


def test_a_bucket_out_of_reach_keeps_the_record_until_it_is_back(settings, bucket_storage, alice, make_file):
    endpoint, bucket = bucket_storage
    stored = make_file(alice)
    key = f"media/{stored.content.name}"
    assert buckets.keys(endpoint, bucket) == [key]
    reachable = settings.STORAGES
    settings.STORAGES = buckets.bucket_storages(
        reachable, buckets.storage_url(f"http://127.0.0.1:{buckets.free_port()}", bucket)
    )
    delete_file(stored)
    record = BytesToDelete.objects.get()
    assert record.last_error.startswith("StorageUnavailable: the bucket is out of reach: Could not connect")
    assert buckets.keys(endpoint, bucket) == [key]

    settings.STORAGES = reachable
    make_due()
    assert retry_deletions(100) == 1
    assert buckets.keys(endpoint, bucket) == []
    assert not BytesToDelete.objects.exists()
