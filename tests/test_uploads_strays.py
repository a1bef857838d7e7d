"""Removed uploads leave no bytes: a finisher that died holding the partial
file's `.store` name loses it with the upload's removal, and the daemon's
housekeeping sweeps whatever a crash left under uploads/partial/ with no
Upload row (on the disk: partial files and `.store` names; in a bucket,
moto's server: unfinished multipart uploads and their tails), once older
than the grace period, and nothing a live upload or a young one holds."""

import logging
import os
import time

import pytest

from expiry import housekeeping
from expiry.housekeeping import Housekeeper
from storage.errors import StorageUnavailable
from tests import buckets
from tests.test_uploads_support import TUS, new_upload, patch, upload_id
from uploads.models import new_upload_id, partial_dir, partial_object, partial_path, store_link
from uploads.strays import GRACE, sweep_strays

pytestmark = pytest.mark.django_db

OLD = time.time() - GRACE.total_seconds() - 60


def stray_file(name: str, *, written: float = OLD):
    path = partial_dir() / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"left behind")
    os.utime(path, (written, written))
    return path


def test_the_sweep_discards_partial_files_and_store_names_no_upload_holds(alice_client):
    live = upload_id(new_upload(alice_client, 10))
    os.utime(partial_path(live), (OLD, OLD))  # old, but its upload is there
    removed, its_link = stray_file(new_upload_id()), stray_file(f"{new_upload_id()}.store")
    young = stray_file(new_upload_id(), written=time.time())
    foreign = stray_file("notes.txt")
    assert sweep_strays() == 2
    assert [removed.exists(), its_link.exists()] == [False, False]
    assert [partial_path(live).exists(), young.exists(), foreign.exists()] == [True, True, True]
    assert sweep_strays() == 0


def test_the_sweep_of_a_disk_that_never_had_an_upload_finds_nothing(db):
    assert not partial_dir().exists()
    assert sweep_strays() == 0


def test_removing_an_upload_takes_a_dead_finishers_store_name_too(alice_client, django_capture_on_commit_callbacks):
    path = new_upload(alice_client, 10)
    os.link(partial_path(upload_id(path)), store_link(upload_id(path)))  # a finisher died holding it
    with django_capture_on_commit_callbacks(execute=True):
        assert alice_client.delete(path, **TUS).status_code == 204
    assert list(partial_dir().iterdir()) == []


def purge_pass_only() -> Housekeeper:
    """A housekeeper whose next due work is a purge pass."""
    clock = [1000.0]
    housekeeper = Housekeeper(clock=lambda: clock[0])
    housekeeper.next_sweep = clock[0] + 10**6
    return housekeeper


def test_the_daemons_purge_pass_sweeps_the_strays_every_so_often(db):
    first = stray_file(new_upload_id())
    housekeeper = purge_pass_only()
    assert housekeeper.step(room=10)
    assert (housekeeper.strays, housekeeper.errors) == (1, 0)
    assert not first.exists()
    # The next pass, a minute on, does not list the folder again.
    second = stray_file(new_upload_id())
    housekeeper.clock = lambda: 1000.0 + housekeeper.purge_interval + 1
    assert housekeeper.step(room=10)
    assert second.exists()
    housekeeper.clock = lambda: 1000.0 + housekeeping.STRAY_SWEEP_EVERY + 1
    assert housekeeper.step(room=10)
    assert not second.exists()


def test_a_failing_stray_sweep_leaves_the_purge_to_go_on(db, monkeypatch, caplog):
    def unreachable(**kwargs):
        raise StorageUnavailable("the bucket is out of reach")

    monkeypatch.setattr(housekeeping, "sweep_strays", unreachable)
    housekeeper = purge_pass_only()
    with caplog.at_level(logging.WARNING, logger="expiry"):
        assert housekeeper.step(room=10)
    assert housekeeper.errors == 0
    assert housekeeper.next_purge > 1000.0  # the purge ran
    assert "sweeping removed uploads' partial bytes failed" in caplog.text


def unfinished(endpoint: str, bucket: str) -> list[str]:
    listed = buckets.client(endpoint).list_multipart_uploads(Bucket=bucket).get("Uploads", [])
    return sorted(item["Key"].rsplit("/", 1)[1] for item in listed)


@pytest.mark.django_db(transaction=True)
def test_the_sweep_discards_a_removed_uploads_parts_in_a_bucket(bucket_storage, alice_client):
    endpoint, bucket = bucket_storage
    live = new_upload(alice_client, 10)  # its multipart upload, begun at creation
    stray = new_upload_id()  # as a removal whose discard never ran leaves it
    partial_object(stray).create()
    assert unfinished(endpoint, bucket) == sorted([upload_id(live), stray])
    assert not partial_dir().exists()  # nothing of theirs on the disk

    # (The grace itself is tested on the disk: moto reports every multipart
    # upload as begun in 2010, so here each one is older than any grace.)
    assert sweep_strays(now=time.time() + GRACE.total_seconds() + 60) == 1
    assert unfinished(endpoint, bucket) == [upload_id(live)]
    assert patch(alice_client, live, 0, b"0123456789").status_code == 204  # the live one goes on to its end
