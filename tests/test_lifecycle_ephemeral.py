"""Ephemeral files (delete_when_unshared): once shared, gone from the disk
and the database within 2 seconds of their last share ending, however it
ends; kept while never shared; other files are never touched."""

import time
from datetime import timedelta

import pytest
from django.core.files.storage import storages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from expiry.housekeeping import Housekeeper
from expiry.watchers import SAFETY_INTERVAL
from sharing.models import Share, ShareEvent, StoredFile
from sharing.models.removal import purge_ended_shares, reap_files, sweep
from tests.helpers import create_share, in_threads, start_manage, stop, storage_env, wait_for_text, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("either_storage")]

DATA = b"send me once\n"


@pytest.fixture
def ephemeral(alice):
    upload = SimpleUploadedFile("once.txt", DATA, content_type="text/plain")
    return StoredFile.create_from_upload(owner=alice, upload=upload, delete_when_unshared=True)


def present(stored: StoredFile) -> bool:
    """Whether the file's bytes are still stored (on the disk or in the bucket)."""
    return storages["default"].exists(stored.content.name)


def gone(stored: StoredFile) -> bool:
    return not present(stored) and not StoredFile.objects.filter(pk=stored.pk).exists()


def share_of(stored: StoredFile, **limits) -> Share:
    return Share.create_for(file=stored, expires_at=timezone.now() + timedelta(hours=1), **limits)


@pytest.mark.parametrize(("sent", "stored"), [("true", True), ("false", False), (None, False)])
def test_the_upload_api_takes_the_flag(alice_client, sent, stored):
    body = {"file": SimpleUploadedFile("a.txt", b"x")}
    if sent is not None:
        body["delete_when_unshared"] = sent
    response = alice_client.post("/api/files/", body, format="multipart")
    assert response.status_code == 201
    assert response.json()["delete_when_unshared"] is stored
    assert StoredFile.objects.get(pk=response.json()["id"]).delete_when_unshared is stored
    assert alice_client.get(f"/api/files/{response.json()['id']}/").json()["delete_when_unshared"] is stored


def test_a_bad_flag_is_a_400(alice_client):
    body = {"file": SimpleUploadedFile("a.txt", b"x"), "delete_when_unshared": "perhaps"}
    response = alice_client.post("/api/files/", body, format="multipart")
    assert response.status_code == 400
    assert "delete_when_unshared" in response.json()
    assert not StoredFile.objects.exists()


def test_a_file_never_shared_is_kept(ephemeral, media_root):
    assert reap_files([ephemeral.pk]) == 0
    assert sweep(100) == 0
    assert present(ephemeral)


def test_unsharing_the_last_share_deletes_the_file(alice_client, ephemeral, media_root):
    first, second = share_of(ephemeral), share_of(ephemeral)
    assert alice_client.delete(f"/api/shares/{first.pk}/").status_code == 204
    assert present(ephemeral), "a share is still live"

    started = time.monotonic()
    assert alice_client.delete(f"/api/shares/{second.pk}/").status_code == 204
    assert wait_until(lambda: gone(ephemeral), 2)
    assert time.monotonic() - started < 2
    second.refresh_from_db()
    assert (second.status, second.files) == (Share.Status.UNSHARED, [])  # the record stays


def test_the_download_that_uses_the_last_allowance_deletes_the_file(anon_client, ephemeral, media_root):
    share = share_of(ephemeral, max_downloads=1)
    response = anon_client.get(f"/s/{share.token}/download")
    assert response.status_code == 200
    # The response reads from a handle opened before the count: it is whole.
    assert b"".join(response.streaming_content) == DATA
    response.close()
    assert wait_until(lambda: gone(ephemeral), 2)
    assert anon_client.get(f"/s/{share.token}/download").status_code in (404, 410)


def test_a_new_limit_that_ends_the_share_deletes_the_file(ephemeral, media_root):
    share = share_of(ephemeral, max_downloads=5)
    assert share.count_download()
    assert share.change(max_downloads=1)
    assert wait_until(lambda: gone(ephemeral), 2)


def test_other_files_stay(alice_client, shared_file, media_root):
    share = share_of(shared_file, max_downloads=1)
    assert share.count_download()
    other = share_of(shared_file)
    assert alice_client.delete(f"/api/shares/{other.pk}/").status_code == 204
    Share.objects.filter(pk=share.pk).update(ended_at=timezone.now() - timedelta(days=60))
    assert purge_ended_shares(100) == 1
    assert sweep(100) == 0
    assert present(shared_file)
    assert StoredFile.objects.filter(pk=shared_file.pk).exists()


def test_purging_its_last_ended_share_deletes_the_file(ephemeral, media_root):
    share = share_of(ephemeral)
    # Ended without its reap (as if a process died between the two), then
    # purged: afterwards no share says the file was ever shared.
    Share.objects.filter(pk=share.pk).update(
        status=Share.Status.UNSHARED, end_reason="unshared", ended_at=timezone.now() - timedelta(days=31)
    )
    assert purge_ended_shares(100) == 1
    assert gone(ephemeral)


def test_the_sweep_reaps_what_a_crash_left(ephemeral, shared_file, media_root):
    share = share_of(ephemeral)
    Share.objects.filter(pk=share.pk).update(
        status=Share.Status.UNSHARED, end_reason="unshared", ended_at=timezone.now()
    )
    kept = share_of(shared_file)
    Share.objects.filter(pk=kept.pk).update(
        status=Share.Status.UNSHARED, end_reason="unshared", ended_at=timezone.now()
    )
    assert sweep(100) == 1
    assert gone(ephemeral)
    assert present(shared_file)


def test_a_share_past_its_deadline_is_not_live(ephemeral, media_root):
    share = create_share(ephemeral, 0.05)
    assert wait_until(lambda: timezone.now() > share.expires_at, 2)
    assert sweep(100) == 1
    assert gone(ephemeral)
    share.refresh_from_db()
    assert (share.status, share.end_reason) == (Share.Status.EXPIRED, Share.EndReason.EXPIRED)
    assert share.events.filter(kind=ShareEvent.Kind.EXPIRED).count() == 1


def test_the_housekeeper_reaps_the_files_of_an_expiry_batch(ephemeral, media_root):
    share = create_share(ephemeral, 0.05)
    housekeeper = Housekeeper().connect()
    try:
        assert wait_until(lambda: timezone.now() > share.expires_at, 2)
        Share.objects.filter(pk=share.pk).update(
            status=Share.Status.EXPIRED, end_reason="expired", ended_at=timezone.now()
        )
        housekeeper.note_expired([share.pk])
        assert housekeeper.seconds_until_next(room=0) == 0
        assert housekeeper.step(room=0)  # even with the next expiry due at once
    finally:
        housekeeper.disconnect()
    assert gone(ephemeral)
    assert housekeeper.reaped == 1


def test_racing_reapers_delete_once(ephemeral, media_root):
    share = share_of(ephemeral)
    Share.objects.filter(pk=share.pk).update(
        status=Share.Status.UNSHARED, end_reason="unshared", ended_at=timezone.now()
    )
    results = in_threads(lambda: reap_files([ephemeral.pk]), workers=4)
    assert sorted(results) == [0, 0, 0, 1]
    assert gone(ephemeral)


@pytest.mark.postgres
def test_postgresql_racing_reapers_delete_once(ephemeral, media_root):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL")
    test_racing_reapers_delete_once(ephemeral, media_root)


def test_a_share_created_before_the_reap_keeps_the_file(ephemeral, media_root):
    first = share_of(ephemeral)
    Share.objects.filter(pk=first.pk).update(
        status=Share.Status.UNSHARED, end_reason="unshared", ended_at=timezone.now()
    )
    share_of(ephemeral)
    assert reap_files([ephemeral.pk]) == 0
    assert present(ephemeral)


@pytest.mark.fault
@pytest.mark.timeout(60)
def test_the_daemon_deletes_the_file_within_2_seconds_of_its_deadline(ephemeral, shared_file, tmp_path, media_root):
    output = tmp_path / "daemon.out"
    daemon = start_manage("runexpiry", "--pickup-interval", "0.05", output=output, **storage_env(media_root))
    try:
        wait_for_text(output, "refresh:", 20, process=daemon)
        share = create_share(ephemeral, 1)
        kept = create_share(shared_file, 1)
        assert wait_until(lambda: not present(ephemeral), 10, 0.005)
        left_disk = timezone.now()
        assert wait_until(lambda: Share.objects.get(pk=kept.pk).status == Share.Status.EXPIRED, 10)
    finally:
        stop(daemon)
    assert daemon.returncode == 0, output.read_text()
    assert left_disk - share.expires_at < timedelta(seconds=2)
    assert not StoredFile.objects.filter(pk=ephemeral.pk).exists()
    share.refresh_from_db()
    assert (share.status, share.end_reason, share.files) == (Share.Status.EXPIRED, "expired", [])
    assert present(shared_file)
    assert "1 ephemeral files deleted" in output.read_text()


@pytest.mark.fault
@pytest.mark.timeout(60)
def test_a_restarted_daemon_sweeps_what_was_left(ephemeral, tmp_path, media_root):
    share = share_of(ephemeral)
    Share.objects.filter(pk=share.pk).update(
        status=Share.Status.UNSHARED, end_reason="unshared", ended_at=timezone.now()
    )
    output = tmp_path / "daemon.out"
    daemon = start_manage("runexpiry", output=output, **storage_env(media_root))
    try:
        assert wait_until(lambda: gone(ephemeral), 10)
    finally:
        stop(daemon)
    assert daemon.returncode == 0, output.read_text()


def test_the_housekeeper_reaps_expiry_batches_together(ephemeral, media_root):
    """At most every REAP_EVERY seconds: one query for many batches, not one each."""
    from expiry import housekeeping

    clock = [100.0]
    housekeeper = Housekeeper(clock=lambda: clock[0])
    housekeeper.next_sweep = housekeeper.next_purge = clock[0] + 60  # only reaps in this test
    housekeeper.note_expired([1])
    assert housekeeper.seconds_until_next(room=10) == 0
    assert housekeeper.step(room=10)  # the first batch: at once
    housekeeper.note_expired([2])
    housekeeper.note_expired([3])
    assert housekeeper.seconds_until_next(room=10) == pytest.approx(housekeeping.REAP_EVERY)
    assert not housekeeper.step(room=10)  # not yet
    assert housekeeper._expired == [2, 3]
    clock[0] += housekeeping.REAP_EVERY
    assert housekeeper.seconds_until_next(room=0) == 0  # then whatever the room
    assert housekeeper.step(room=0)
    assert housekeeper._expired == []


def test_the_housekeeper_sweeps_only_when_an_ephemeral_file_exists(shared_file, media_root):
    """Idle cost: without any ephemeral file (or pending download to fold)
    the sweep is one-row probes, not the sweep's query (~1.5 ms of CPU every
    5 s on an idle daemon) nor a write transaction."""
    clock = [100.0]
    housekeeper = Housekeeper(clock=lambda: clock[0])
    housekeeper.next_purge = clock[0] + 60  # only the sweep in this test
    with CaptureQueriesContext(connection) as queries:
        assert housekeeper.step(room=10)
    assert [query["sql"].endswith("LIMIT 1") for query in queries] == [True, True]
    assert "delete_when_unshared LIMIT 1" in queries[0]["sql"]
    assert present(shared_file)


def test_the_housekeeper_reaps_with_a_probe_alone_when_no_ephemeral_file_exists(shared_file, media_root):
    """At 10,000 expiries a second the reap's query (thousands of ids, built
    by the ORM) stalled the daemon every 0.25 s; with no ephemeral file there
    is nothing it could reap."""
    clock = [100.0]
    housekeeper = Housekeeper(clock=lambda: clock[0])
    housekeeper.next_sweep = housekeeper.next_purge = clock[0] + 60  # only reaps in this test
    housekeeper.note_expired(list(range(1, 2001)))
    with CaptureQueriesContext(connection) as queries:
        assert housekeeper.step(room=0)
    assert [query["sql"] for query in queries] == [queries[0]["sql"]]
    assert queries[0]["sql"].endswith("delete_when_unshared LIMIT 1")
    assert housekeeper._expired == []
    assert present(shared_file)


def test_the_housekeeper_sweep_still_reaps_when_an_ephemeral_file_exists(ephemeral, media_root):
    share = share_of(ephemeral)
    Share.objects.filter(pk=share.pk).update(
        status=Share.Status.UNSHARED, end_reason="unshared", ended_at=timezone.now()
    )
    clock = [100.0]
    housekeeper = Housekeeper(clock=lambda: clock[0])
    housekeeper.next_purge = clock[0] + 60
    assert housekeeper.step(room=10)
    assert gone(ephemeral)
    assert housekeeper.reaped == 1


def test_a_housekeeper_awake_anyway_sweeps_up_to_a_safety_interval_early(shared_file):
    """So the sweep rides on the idle daemon's wake-ups (one every SAFETY_INTERVAL)."""
    assert SAFETY_INTERVAL == 2.0
    clock = [100.0]
    housekeeper = Housekeeper(clock=lambda: clock[0], sweep_interval=5.0)
    housekeeper.next_purge = clock[0] + 600  # only the sweep in this test
    assert housekeeper.step(room=10)  # the sweep at start
    assert housekeeper.seconds_until_next(room=10) == pytest.approx(5.0)  # no wake-up of its own before
    clock[0] += 2.9
    assert not housekeeper.step(room=10)
    clock[0] += 0.2  # 1.9 s before it is due
    with CaptureQueriesContext(connection) as queries:
        assert housekeeper.step(room=10)
    assert len(queries) == 2  # the sweep's probes: ephemeral files, pending downloads
    assert housekeeper.next_sweep == pytest.approx(clock[0] + 5.0)
