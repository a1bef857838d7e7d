"""Resumable uploads end at their deadline through the expiry daemon: their
deadlines in a heap beside the shares', each removal re-validated against
the database (the row locked, the time read then, the one `due` rule), the
space they set aside given back and their bytes unlinked after the commit."""

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone
from freezegun import freeze_time

from expiry.rows import RECHECK as WRITING_RECHECK
from expiry.service import build_service
from expiry.uploads import UploadSchedule
from expiry.watchers import watcher_for
from sharing.models import StorageAccount
from tests.helpers import wait_until
from tests.test_uploads_support import new_upload, patch, upload_id
from uploads.models import Upload, partial_path

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


def reserved(user) -> int:
    return StorageAccount.objects.get(pk=user.pk).reserved_bytes


@pytest.fixture
def schedule():
    return UploadSchedule()


@pytest.mark.django_db
def test_an_upload_goes_at_its_deadline_not_before(
    alice, alice_client, settings, schedule, django_capture_on_commit_callbacks
):
    settings.UPLOAD_EXPIRES_AFTER = 60
    with freeze_time(T0) as clock:
        soon = upload_id(new_upload(alice_client, 10))
        settings.UPLOAD_EXPIRES_AFTER = 7200
        later = upload_id(new_upload(alice_client, 20))
        assert schedule.refresh(T0.timestamp(), (T0 + timedelta(hours=1)).timestamp()) == 1
        assert schedule.scheduled_time(soon) == (T0 + timedelta(seconds=60)).timestamp()
        assert schedule.scheduled_time(later) is None  # past the window: the next refresh loads it

        clock.tick(59)
        assert not schedule.has_due(timezone.now().timestamp())
        clock.tick(1)
        with django_capture_on_commit_callbacks(execute=True):
            assert schedule.run_due(timezone.now().timestamp()) == 1
    assert list(Upload.objects.values_list("pk", flat=True)) == [later]
    assert not partial_path(soon).exists()
    assert partial_path(later).exists()
    assert reserved(alice) == 20  # the removed upload's 10 bytes given back


@pytest.mark.django_db
def test_a_chunk_renews_the_deadline_and_the_daemon_follows_it(alice, alice_client, settings, schedule):
    settings.UPLOAD_EXPIRES_AFTER = 60
    with freeze_time(T0) as clock:
        path = new_upload(alice_client, 10)
        schedule.refresh(T0.timestamp(), (T0 + timedelta(hours=1)).timestamp())
        clock.tick(30)
        assert patch(alice_client, path, 0, b"12345").status_code == 204  # renewed to T0 + 90 s
        clock.tick(30)
        assert schedule.run_due(timezone.now().timestamp()) == 0  # due by the heap, not by the row
        assert schedule.scheduled_time(upload_id(path)) == (T0 + timedelta(seconds=90)).timestamp()
        clock.tick(30)
        assert schedule.run_due(timezone.now().timestamp()) == 1
    assert not Upload.objects.exists()


@pytest.mark.django_db
def test_an_upload_being_written_at_its_deadline_is_looked_at_again(alice, alice_client, settings, schedule):
    settings.UPLOAD_EXPIRES_AFTER = 60
    with freeze_time(T0) as clock:
        path = new_upload(alice_client, 10)
        schedule.refresh(T0.timestamp(), (T0 + timedelta(hours=1)).timestamp())
        Upload.objects.update(writer="a-request", writing_until=T0 + timedelta(seconds=65))
        clock.tick(60)
        now = timezone.now().timestamp()
        assert schedule.run_due(now) == 0
        assert schedule.scheduled_time(upload_id(path)) == now + WRITING_RECHECK
        clock.tick(6)  # its claim lapsed, and its deadline had passed
        assert schedule.run_due(timezone.now().timestamp()) == 1


@pytest.mark.django_db(transaction=True)
def test_the_running_daemon_removes_an_upload_within_two_seconds_of_its_deadline(alice, alice_client, settings):
    settings.UPLOAD_EXPIRES_AFTER = 1.5
    service = build_service(refresh_interval=3600, lease="off", webhooks=False)
    service.start()
    try:
        # Created after the daemon's window was loaded: its creation asks the daemons to pick it up.
        assert wait_until(lambda: service.scheduler.window_end > 0, 5)
        path = new_upload(alice_client, 10)
        upload = Upload.objects.get(pk=upload_id(path))
        assert wait_until(lambda: not Upload.objects.filter(pk=upload.pk).exists(), 10)
        gone_at = timezone.now()
    finally:
        service.stop()
        service.join(10)
        service.close()
    assert (gone_at - upload.expires_at).total_seconds() < 2
    assert not partial_path(upload.pk).exists()
    assert reserved(alice) == 0
    assert service.scheduler.uploads.stats.ended == 1


@pytest.mark.django_db(transaction=True)
def test_creating_an_upload_asks_the_daemons_to_pick_it_up(alice_client):
    wake = threading.Event()
    watcher = watcher_for()
    watcher.start(wake)
    try:
        assert wait_until(lambda: watcher.take_notices() == [] and watcher.listening, 5)
        watcher.changed()  # the pick-up a fresh listener asks for, done
        wake.clear()
        new_upload(alice_client, 10)
        assert wake.wait(5)
        assert watcher.take_notices() == []  # no deadline of a share...
        assert watcher.wants_pickup  # ...but a pick-up, now
    finally:
        watcher.stop()
