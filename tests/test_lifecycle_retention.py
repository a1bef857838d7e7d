"""Retention: shares ended longer than the policy's ended_retention ago are
purged with their events and downloads, in bounded batches, by the daemon."""

from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from expiry.housekeeping import BACKLOG_PAUSE, Housekeeper
from sharing.models import Download, Share, ShareEvent, SharingPolicy
from sharing.models.removal import purge_ended_shares
from tests.helpers import in_threads, start_manage, stop, storage_env, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("either_storage")]


def ended_ago(shared_file, age: timedelta) -> Share:
    share = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1))
    share.reserve_bytes(first=0, end=1)
    share.unshare()
    Share.objects.filter(pk=share.pk).update(ended_at=timezone.now() - age)
    return share


def exists(share: Share) -> bool:
    return Share.objects.filter(pk=share.pk).exists()


def test_old_ended_shares_go_with_their_events_and_downloads(shared_file):
    old = ended_ago(shared_file, timedelta(days=31))
    recent = ended_ago(shared_file, timedelta(days=29))
    active = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1))
    Share.objects.filter(pk=active.pk).update(created_at=timezone.now() - timedelta(days=90))

    assert purge_ended_shares(500) == 1

    assert not exists(old)
    assert not ShareEvent.objects.filter(share_id=old.pk).exists()
    assert not Download.objects.filter(share_id=old.pk).exists()
    assert exists(recent)
    assert ShareEvent.objects.filter(share_id=recent.pk).count() == 3  # created, downloaded, unshared
    assert Download.objects.filter(share_id=recent.pk).exists()
    assert exists(active)
    assert shared_file.__class__.objects.filter(pk=shared_file.pk).exists()  # files are not shares


def test_the_policy_sets_the_retention(shared_file):
    share = ended_ago(shared_file, timedelta(hours=2))
    assert purge_ended_shares(500) == 0
    SharingPolicy.objects.create(ended_retention=timedelta(hours=1))
    assert purge_ended_shares(500) == 1
    assert not exists(share)


def test_a_batch_is_bounded_and_takes_the_oldest_first(shared_file):
    shares = [ended_ago(shared_file, timedelta(days=40 - n)) for n in range(5)]
    assert purge_ended_shares(2) == 2
    assert [exists(share) for share in shares] == [False, False, True, True, True]
    assert purge_ended_shares(2) == 2
    assert purge_ended_shares(2) == 1
    assert purge_ended_shares(2) == 0


def test_a_retention_below_a_second_is_refused(db):
    with pytest.raises(IntegrityError), transaction.atomic():
        SharingPolicy.objects.create(ended_retention=timedelta(0))


def test_the_admin_edits_the_retention(admin_client):
    url = f"/admin/sharing/sharingpolicy/{SharingPolicy.SINGLETON_ID}/change/"
    admin_client.get("/admin/sharing/sharingpolicy/")
    page = admin_client.get(url)
    assert b"ended_retention" in page.content
    fields = {"default_lifetime": "7 00:00:00", "max_lifetime": "30 00:00:00"}
    assert admin_client.post(url, {**fields, "ended_retention": "2 00:00:00"}).status_code == 302
    assert SharingPolicy.current().ended_retention == timedelta(days=2)
    refused = admin_client.post(url, {**fields, "ended_retention": "00:00:00"})
    assert refused.status_code == 200
    assert "ended_retention" in refused.context["adminform"].form.errors
    assert SharingPolicy.current().ended_retention == timedelta(days=2)


def test_the_file_admin_shows_the_flag(admin_client, shared_file):
    page = admin_client.get(f"/admin/sharing/storedfile/{shared_file.pk}/change/")
    assert page.status_code == 200
    assert b"Delete when unshared" in page.content


def test_a_pass_is_bounded_then_drains_the_backlog_after_a_pause(shared_file):
    shares = [ended_ago(shared_file, timedelta(days=40)) for _ in range(7)]
    clock = [1000.0]
    housekeeper = Housekeeper(
        purge_interval=60, sweep_interval=3600, batch_size=2, batches_per_pass=2, clock=lambda: clock[0]
    )
    assert housekeeper.step(room=1)  # the sweep at start
    assert housekeeper.step(room=1)
    assert housekeeper.step(room=1)
    assert housekeeper.purged == 4
    assert not housekeeper.step(room=1)  # the pass is over
    assert housekeeper.seconds_until_next(room=1) == BACKLOG_PAUSE
    clock[0] += BACKLOG_PAUSE
    assert housekeeper.step(room=1)
    assert housekeeper.step(room=1)  # a short batch: the backlog is gone
    assert housekeeper.purged == 7
    assert housekeeper.seconds_until_next(room=1) == 60
    assert not any(exists(share) for share in shares)


def test_housekeeping_waits_for_room_between_expiries(shared_file):
    ended_ago(shared_file, timedelta(days=40))
    clock = [1000.0]
    housekeeper = Housekeeper(clock=lambda: clock[0])
    assert not housekeeper.step(room=0.001)  # an expiry is due in a millisecond
    assert housekeeper.seconds_until_next(room=0.001) > 1  # and the loop does not spin
    clock[0] += 10  # but never waits for ever
    assert housekeeper.step(room=0.001)


def test_racing_purges_delete_each_share_once(shared_file):
    shares = [ended_ago(shared_file, timedelta(days=40)) for _ in range(20)]
    results = in_threads(lambda: sum(iter(lambda: purge_ended_shares(3), 0)), workers=3)
    assert sum(results) == 20
    assert not any(exists(share) for share in shares)


@pytest.mark.postgres
def test_postgresql_racing_purges_delete_each_share_once(shared_file):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL")
    test_racing_purges_delete_each_share_once(shared_file)


@pytest.mark.fault
@pytest.mark.timeout(60)
def test_the_daemon_purges(shared_file, tmp_path, media_root):
    old, recent = ended_ago(shared_file, timedelta(days=31)), ended_ago(shared_file, timedelta(days=1))
    output = tmp_path / "daemon.out"
    daemon = start_manage("runexpiry", output=output, **storage_env(media_root))
    try:
        assert wait_until(lambda: not exists(old), 10)
    finally:
        stop(daemon)
    assert daemon.returncode == 0, output.read_text()
    assert exists(recent)
    assert "1 ended shares purged" in output.read_text()
