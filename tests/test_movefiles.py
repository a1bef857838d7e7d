"""movefiles: stored files' bytes copied between the local disk (MEDIA_ROOT)
and a bucket (moto's server), verified, resumable, under the same names."""

import hashlib
import io
import os
import re
import signal
import time

import pytest
from django.conf import settings
from django.core.files.base import ContentFile
from django.core.management import CommandError, call_command

from sharing.catalogue import StoredFiles
from sharing.models import StoredFile
from storage.buckets import BucketStorage
from storage.disk import DurableFileSystemStorage
from storage.moving import Mover
from storage.stored import new_name
from tests import buckets
from tests.helpers import start_manage, storage_env

BIG = bytes(range(256)) * 4096 * 3  # 3 MiB: several chunks each way
SMALL = [b"quarterly numbers\n", b"slides\n" * 1000]


def disk():
    return DurableFileSystemStorage(location=settings.MEDIA_ROOT)


def bucket():
    return BucketStorage(**settings.STORAGES["default"]["OPTIONS"])


def disk_file(owner, data: bytes, name: str = "report.txt") -> StoredFile:
    """A stored file whose bytes are on the disk, whatever the default storage."""
    stored_name = disk().save(new_name(), ContentFile(data))
    return StoredFile.objects.create(
        owner=owner,
        content=stored_name,
        name=name,
        size=len(data),
        content_type="application/octet-stream",
        sha256=hashlib.sha256(data).hexdigest(),
    )


def read(storage, name: str) -> bytes:
    with storage.open(name, "rb") as handle:
        return handle.read()


def move(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("movefiles", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def move_failing(*args: str) -> tuple[str, str, CommandError]:
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError) as raised:
        call_command("movefiles", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue(), raised.value


def summary(moved: int, size: int, skipped: int, failed: int) -> str:
    return f"moved {moved} files ({size} bytes), skipped {skipped} already there, {failed} failed\n"


@pytest.fixture
def files(alice, bucket_storage):
    """Three files on the disk, and a bucket for them: (files, endpoint, bucket name)."""
    made = [disk_file(alice, BIG, "big.bin")] + [disk_file(alice, data) for data in SMALL]
    return made, *bucket_storage


def total(files) -> int:
    return sum(stored.size for stored in files)


@pytest.mark.django_db
def test_it_moves_files_to_a_bucket_and_back_byte_identical(files):
    stored, endpoint, name = files
    out, err = move("--to", "bucket")
    assert out == summary(3, total(stored), 0, 0)
    assert err == ""
    # The same names under the bucket's prefix: no row needs to change.
    assert buckets.keys(endpoint, name) == sorted(f"media/{each.content.name}" for each in stored)
    for each in stored:
        assert read(bucket(), each.content.name) == read(disk(), each.content.name)
    # The service, now reading from the bucket, serves them.
    assert StoredFile.objects.get(pk=stored[0].pk).content.open("rb").read() == BIG

    originals = {each.content.name: read(disk(), each.content.name) for each in stored}
    for each in stored:
        disk().delete(each.content.name)
    out, err = move("--to", "disk")
    assert out == summary(3, total(stored), 0, 0)
    assert {each.content.name: read(disk(), each.content.name) for each in stored} == originals
    assert sorted(
        str(path.relative_to(settings.MEDIA_ROOT)) for path in settings.MEDIA_ROOT.rglob("*") if path.is_file()
    ) == sorted(originals)


@pytest.mark.django_db
def test_a_second_run_skips_what_the_first_copied(files):
    stored, _, _ = files
    bucket().save(stored[1].content.name, ContentFile(SMALL[0]))  # copied before an interruption
    assert move("--to", "bucket")[0] == summary(2, total(stored) - stored[1].size, 1, 0)
    assert move("--to", "bucket")[0] == summary(0, 0, 3, 0)
    assert move("--to", "bucket", "--verify-existing")[0] == summary(0, 0, 3, 0)


def wait_for_a_copy(process, endpoint: str, bucket_name: str) -> None:
    """Return once the bucket holds a first copy, the process still running."""
    deadline = time.monotonic() + 60
    while not buckets.keys(endpoint, bucket_name):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.01)


@pytest.mark.django_db(transaction=True)
def test_a_killed_run_resumes_where_it_stopped(alice, bucket_storage, media_root):
    endpoint, name = bucket_storage
    stored = [disk_file(alice, os.urandom(64 * 1024) + bytes([i])) for i in range(60)]
    mover = start_manage("movefiles", "--to", "bucket", **storage_env(media_root))
    try:
        wait_for_a_copy(mover, endpoint, name)
        mover.send_signal(signal.SIGKILL)
        mover.wait(10)
    finally:
        if mover.poll() is None:
            mover.kill()
            mover.wait(10)
    copied = len(buckets.keys(endpoint, name))
    assert 0 < copied < len(stored), "the kill came mid-run"

    out, _ = move("--to", "bucket")
    assert out == summary(len(stored) - copied, sum(each.size for each in stored[copied:]), copied, 0)
    assert buckets.keys(endpoint, name) == sorted(f"media/{each.content.name}" for each in stored)
    copies = bucket()  # one client: building one takes longer than the reads
    for each in stored:
        assert hashlib.sha256(read(copies, each.content.name)).hexdigest() == each.sha256


@pytest.mark.django_db(transaction=True)
def test_ctrl_c_prints_the_summary_so_far(alice, bucket_storage, media_root):
    endpoint, name = bucket_storage
    for i in range(60):
        disk_file(alice, os.urandom(64 * 1024) + bytes([i]))
    mover = start_manage("movefiles", "--to", "bucket", **storage_env(media_root))
    try:
        wait_for_a_copy(mover, endpoint, name)
        mover.send_signal(signal.SIGINT)
        out, err = mover.communicate(timeout=30)
    finally:
        if mover.poll() is None:
            mover.kill()
            mover.wait(10)
    assert mover.returncode == 130, err
    assert "interrupted: run it again to go on where it stopped" in err
    so_far = re.fullmatch(r"moved (\d+) files \(\d+ bytes\), skipped 0 already there, 0 failed\n", out)
    assert so_far, out
    assert int(so_far[1]) < 60


@pytest.mark.django_db
def test_a_corrupted_copy_of_the_right_size_is_copied_again_with_verify_existing(files):
    stored, endpoint, name = files
    move("--to", "bucket")
    corrupted = stored[2]
    buckets.client(endpoint).put_object(Bucket=name, Key=f"media/{corrupted.content.name}", Body=b"x" * corrupted.size)
    assert move("--to", "bucket")[0] == summary(0, 0, 3, 0)  # the size alone is trusted
    assert move("--to", "bucket", "--verify-existing")[0] == summary(1, corrupted.size, 2, 0)
    assert read(bucket(), corrupted.content.name) == SMALL[1]


@pytest.mark.django_db
def test_on_the_disk_a_bad_copy_is_replaced_under_its_own_name(files):
    stored, _, _ = files
    move("--to", "bucket")
    partial, corrupted = stored[0], stored[1]
    for each in stored:
        disk().delete(each.content.name)
    (settings.MEDIA_ROOT / partial.content.name).write_bytes(BIG[:1000])  # a copy cut short
    (settings.MEDIA_ROOT / corrupted.content.name).write_bytes(b"y" * corrupted.size)
    assert move("--to", "disk", "--verify-existing")[0] == summary(3, total(stored), 0, 0)
    assert read(disk(), partial.content.name) == BIG
    assert read(disk(), corrupted.content.name) == SMALL[0]
    assert len([path for path in settings.MEDIA_ROOT.rglob("*") if path.is_file()]) == 3


@pytest.mark.django_db
def test_a_missing_source_is_reported_by_name_and_fails_the_run(files):
    stored, endpoint, name = files
    missing = stored[1]
    disk().delete(missing.content.name)
    out, err, error = move_failing("--to", "bucket")
    assert out == summary(2, total(stored) - missing.size, 0, 1)
    assert f"FAILED {missing.content.name} (file {missing.pk}, 'report.txt'): missing from the source" in err
    assert error.returncode == 1
    assert len(buckets.keys(endpoint, name)) == 2


@pytest.mark.django_db(transaction=True)
def test_the_exit_status_is_not_zero_when_a_file_failed(alice, bucket_storage, media_root):
    disk_file(alice, SMALL[0])
    missing = disk_file(alice, SMALL[1])
    disk().delete(missing.content.name)
    finished = start_manage("movefiles", "--to", "bucket", **storage_env(media_root))
    out, err = finished.communicate(timeout=60)
    assert finished.returncode == 1, err
    assert out == summary(1, len(SMALL[0]), 0, 1)
    assert missing.content.name in err


@pytest.mark.django_db
def test_a_copy_that_does_not_match_the_sha256_is_removed_and_fails(files):
    stored, endpoint, name = files
    changed = stored[1]
    (settings.MEDIA_ROOT / changed.content.name).write_bytes(b"z" * changed.size)  # the disk's bytes rotted
    _, err, _ = move_failing("--to", "bucket", "--delete-source")
    assert f"FAILED {changed.content.name}" in err
    assert "sha256" in err
    assert buckets.keys(endpoint, name) == sorted(f"media/{each.content.name}" for each in stored if each != changed)


@pytest.mark.django_db
def test_delete_source_removes_only_verified_sources(files):
    stored, _, _ = files
    good, rotten, precopied = stored
    (settings.MEDIA_ROOT / rotten.content.name).write_bytes(b"z" * rotten.size)
    # Copied before an interruption, but wrong: with --delete-source it is
    # read back before its source goes, so it is copied again.
    bucket().save(precopied.content.name, ContentFile(b"w" * precopied.size))
    out, _, _ = move_failing("--to", "bucket", "--delete-source")
    assert out == summary(2, good.size + precopied.size, 0, 1)
    assert not disk().exists(good.content.name)
    assert not disk().exists(precopied.content.name)
    assert disk().exists(rotten.content.name)
    assert read(bucket(), precopied.content.name) == SMALL[1]
    assert read(bucket(), good.content.name) == BIG


@pytest.mark.django_db
def test_delete_source_after_an_interruption_removes_sources_already_copied(files):
    stored, _, _ = files
    move("--to", "bucket")  # as if killed before the sources were removed
    assert move("--to", "bucket", "--delete-source")[0] == summary(0, 0, 3, 0)
    assert not any(disk().exists(each.content.name) for each in stored)


@pytest.mark.django_db
def test_without_delete_source_the_sources_stay(files):
    stored, _, _ = files
    move("--to", "bucket")
    assert all(disk().exists(each.content.name) for each in stored)


@pytest.mark.django_db
def test_dry_run_lists_what_would_be_copied_and_copies_nothing(files):
    stored, endpoint, name = files
    bucket().save(stored[0].content.name, ContentFile(BIG))
    missing = stored[2]
    disk().delete(missing.content.name)
    out, err, _ = move_failing("--to", "bucket", "--dry-run", "--delete-source")
    assert out == (
        f"would copy {stored[1].content.name} (file {stored[1].pk}, 'report.txt'), {stored[1].size} bytes\n"
        f"dry run: would move 1 files ({stored[1].size} bytes), skipped 1 already there, 1 failed\n"
    )
    assert f"FAILED {missing.content.name}" in err
    assert buckets.keys(endpoint, name) == [f"media/{stored[0].content.name}"]
    assert disk().exists(stored[0].content.name)
    assert disk().exists(stored[1].content.name)


@pytest.mark.django_db
def test_files_added_during_a_run_wait_for_the_next_one(files, alice):
    added = []

    def add_one(tally):
        if not added:
            added.append(disk_file(alice, b"late\n"))

    tally = Mover.to("bucket", catalogue=StoredFiles(), progress=add_one).run()
    assert (tally.moved, tally.total_files) == (3, 3)
    assert move("--to", "bucket")[0] == summary(1, 5, 3, 0)


@pytest.mark.django_db
def test_a_file_deleted_during_a_run_is_passed_over_not_failed(files):
    stored, _, _ = files
    doomed = stored[2]
    reported = []

    def delete_one(tally):
        if tally.done_files == 1:
            disk().delete(doomed.content.name)
            StoredFile.objects.filter(pk=doomed.pk).delete()

    tally = Mover.to("bucket", catalogue=StoredFiles(), progress=delete_one, report=reported.append).run()
    assert (tally.moved, tally.failed) == (2, 0)
    assert reported == [f"passed over {doomed.content.name} (file {doomed.pk}, 'report.txt'): deleted during the run"]


@pytest.mark.django_db
@pytest.mark.parametrize("direction", ["bucket", "disk"])
def test_it_needs_storage_url_either_way(settings, direction):
    settings.STORAGE_URL = ""
    with pytest.raises(CommandError, match="STORAGE_URL is not set"):
        move("--to", direction)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.django_db
def test_a_terminal_shows_a_progress_line(files):
    stored, _, _ = files
    disk().delete(stored[1].content.name)
    out, err = io.StringIO(), Terminal()
    with pytest.raises(CommandError):
        call_command("movefiles", "--to", "bucket", stdout=out, stderr=err, no_color=True)
    shown = err.getvalue()
    assert "\r1/3 files, 3.0 MiB of 3.0 MiB" in shown
    assert "\r3/3 files, 3.0 MiB of 3.0 MiB" in shown
    # A failure is printed on a line of its own, not inside the progress line.
    assert f"\r\x1b[KFAILED {stored[1].content.name}" in shown
    assert shown.endswith("\r\x1b[K")  # cleared before the summary
    assert out.getvalue() == summary(2, total(stored) - stored[1].size, 0, 1)


@pytest.mark.django_db
def test_no_progress_line_when_stderr_is_not_a_terminal(files):
    assert "\r" not in move("--to", "bucket")[1]
