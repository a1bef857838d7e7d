"""Upload requests end at their deadline through the expiry daemon: their
deadlines in a heap of their own (expiry.rows), each end re-validated
against the database (collect.ending.end_if_due: the row locked, the time
read then), the uploads still going through the request removed with their
bytes, their space and their places given back. A request its owner
closed first is left alone."""

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone
from freezegun import freeze_time
from rest_framework.test import APIClient

from collect.ending import close_request
from collect.models import UploadRequest
from expiry.requests import RequestSchedule
from expiry.rows import RECHECK, RowStats
from expiry.service import build_service
from sharing.models import StorageAccount
from tests.helpers import report, wait_until
from tests.test_uploads_support import metadata, new_upload, patch, upload_id
from uploads.models import Upload, partial_path

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


def new_request(owner, seconds: float, **fields) -> UploadRequest:
    return UploadRequest.create_for(owner=owner, expires_at=timezone.now() + timedelta(seconds=seconds), **fields)


def fresh(upload_request: UploadRequest) -> UploadRequest:
    return UploadRequest.objects.get(pk=upload_request.pk)


def ended(upload_request: UploadRequest) -> bool:
    return fresh(upload_request).ended_at is not None


def tus_endpoint(upload_request: UploadRequest) -> str:
    return f"/r/{upload_request.token}/uploads/"


# The schedule's logic, with a frozen clock: no daemon, no sleeping.


@pytest.fixture
def schedule():
    return RequestSchedule()


@pytest.mark.django_db
def test_due_requests_end_at_their_deadline_not_before(alice, schedule, django_capture_on_commit_callbacks):
    with freeze_time(T0) as clock:
        soon = new_request(alice, 60)
        also_soon = new_request(alice, 60)
        later = new_request(alice, 7200)
        assert schedule.refresh(T0.timestamp(), (T0 + timedelta(hours=1)).timestamp()) == 2
        assert schedule.scheduled_time(soon.pk) == (T0 + timedelta(seconds=60)).timestamp()
        assert schedule.scheduled_time(later.pk) is None  # past the window: the next refresh loads it

        clock.tick(59)
        assert not schedule.has_due(timezone.now().timestamp())
        assert schedule.run_due(timezone.now().timestamp()) == 0
        assert not ended(soon)
        clock.tick(1)
        with django_capture_on_commit_callbacks(execute=True):
            assert schedule.run_due(timezone.now().timestamp()) == 2
    for upload_request in (fresh(soon), fresh(also_soon)):
        assert (upload_request.ended_at, upload_request.end_reason) == (T0 + timedelta(seconds=60), "expired")
    assert not ended(later)
    assert len(schedule) == 0
    assert schedule.stats.ended == 2


@pytest.mark.django_db
def test_a_request_closed_meanwhile_is_skipped_and_not_scheduled_again(alice, schedule):
    with freeze_time(T0) as clock:
        closed = new_request(alice, 60)
        due = new_request(alice, 60)
        schedule.refresh(T0.timestamp(), (T0 + timedelta(hours=1)).timestamp())
        clock.tick(30)
        assert close_request(closed) is True
        clock.tick(30)
        assert schedule.run_due(timezone.now().timestamp()) == 1
        assert schedule.scheduled_time(closed.pk) is None
        assert len(schedule) == 0
        assert schedule.stats.renewed == 0
    assert (fresh(closed).ended_at, fresh(closed).end_reason) == (T0 + timedelta(seconds=30), "closed")
    assert fresh(due).end_reason == "expired"
    # A later refresh does not bring it back: it is not open.
    assert schedule.refresh((T0 + timedelta(seconds=61)).timestamp(), (T0 + timedelta(hours=1)).timestamp()) == 0


@pytest.mark.django_db
def test_a_request_whose_deadline_moved_is_scheduled_at_the_new_one(alice, schedule):
    with freeze_time(T0) as clock:
        moved = new_request(alice, 60)
        schedule.refresh(T0.timestamp(), (T0 + timedelta(hours=1)).timestamp())
        # Changed behind the heap's back (the admin's form): the database decides.
        UploadRequest.objects.filter(pk=moved.pk).update(expires_at=T0 + timedelta(seconds=90))
        clock.tick(60)
        now = timezone.now().timestamp()
        assert schedule.run_due(now) == 0
        assert schedule.scheduled_time(moved.pk) == (T0 + timedelta(seconds=90)).timestamp()
        assert schedule.stats.renewed == 1
        clock.tick(30)
        assert schedule.run_due(timezone.now().timestamp()) == 1
    assert fresh(moved).ended_at == T0 + timedelta(seconds=90)


@pytest.mark.django_db
def test_a_request_due_but_just_seen_open_is_looked_at_again_no_sooner_than_recheck(alice, schedule):
    with freeze_time(T0) as clock:
        moved = new_request(alice, 60)
        schedule.refresh(T0.timestamp(), (T0 + timedelta(hours=1)).timestamp())
        UploadRequest.objects.filter(pk=moved.pk).update(expires_at=T0 + timedelta(seconds=60, milliseconds=1))
        clock.tick(60)
        now = timezone.now().timestamp()
        assert schedule.run_due(now) == 0
        assert schedule.scheduled_time(moved.pk) == now + RECHECK


# The real daemon (as runexpiry runs it), in this process, on the test's database.


@pytest.fixture
def running_daemon():
    service = build_service(refresh_interval=3600, lease="off", webhooks=False)
    service.start()
    try:
        # Requests created after the window was loaded: their creation asks the daemons to pick them up.
        assert wait_until(lambda: service.scheduler.window_end > 0, 5)
        yield service
    finally:
        service.stop()
        service.join(10)
        service.close()


def counted_once_stopped(service) -> RowStats:
    """The request schedule's counts once the daemon thread has ended: it
    counts a batch after the batch's ends commit, so while it runs its count
    can trail what the database already shows."""
    service.stop()
    service.join(10)
    assert not service.daemon.is_alive()
    return service.scheduler.requests.stats


@pytest.mark.fault
@pytest.mark.django_db(transaction=True)
def test_the_running_daemon_ends_a_request_within_100_ms_of_its_deadline(alice, running_daemon, capsys):
    upload_request = new_request(alice, 1)
    assert wait_until(lambda: ended(upload_request), 10)
    done = fresh(upload_request)
    late_ms = (done.ended_at - done.expires_at).total_seconds() * 1000
    report(capsys, "upload request ended by the daemon", ended_at_minus_expires_at_ms=f"{late_ms:.1f}")
    assert done.end_reason == "expired"
    assert 0 <= late_ms < 100, f"ended_at - expires_at = {late_ms:.1f} ms"
    assert counted_once_stopped(running_daemon).ended == 1


@pytest.mark.fault
@pytest.mark.django_db(transaction=True)
def test_the_running_daemon_removes_an_upload_in_progress_at_the_requests_deadline(alice, running_daemon):
    upload_request = new_request(alice, 1.5)
    uploader = APIClient()
    path = new_upload(uploader, 10, endpoint=tus_endpoint(upload_request), filename="half.bin")
    assert patch(uploader, path, 0, b"01234").status_code == 204  # half its bytes
    upload = Upload.objects.get(pk=upload_id(path))
    assert upload.ends_by == upload_request.expires_at
    assert partial_path(upload.pk).read_bytes() == b"01234"
    assert (fresh(upload_request).files_taken, StorageAccount.objects.get(pk=alice.pk).reserved_bytes) == (1, 10)

    # Its bytes are unlinked once the removal commits: a moment after its row is gone.
    assert wait_until(
        lambda: not Upload.objects.filter(pk=upload.pk).exists() and not partial_path(upload.pk).exists(), 10
    )
    gone_at = timezone.now()
    assert (gone_at - upload_request.expires_at).total_seconds() < 2
    assert patch(uploader, path, 5, b"56789").status_code in (404, 410)
    assert StorageAccount.objects.get(pk=alice.pk).reserved_bytes == 0
    assert wait_until(lambda: ended(upload_request), 5)
    done = fresh(upload_request)
    assert (done.end_reason, done.files_taken, done.bytes_taken) == ("expired", 0, 0)
    assert not done.received.exists()


@pytest.mark.fault
@pytest.mark.django_db(transaction=True)
def test_the_running_daemon_leaves_a_request_its_owner_closed_alone(alice, running_daemon):
    closed = new_request(alice, 0.5)
    witness = new_request(alice, 1)  # due after it: once it ended, the closed one's deadline had passed
    assert close_request(closed) is True
    closed_at = fresh(closed).ended_at
    assert wait_until(lambda: ended(witness), 10)
    assert (fresh(closed).ended_at, fresh(closed).end_reason) == (closed_at, "closed")
    assert counted_once_stopped(running_daemon).ended == 1  # the witness only
    assert running_daemon.scheduler.requests.scheduled_time(closed.pk) is None


@pytest.mark.django_db(transaction=True)
def test_an_upload_made_through_a_request_is_refused_a_chunk_at_the_deadline_without_a_daemon(alice):
    upload_request = new_request(alice, 0.5)
    uploader = APIClient()
    path = new_upload(uploader, 10, endpoint=tus_endpoint(upload_request), filename="late.bin")
    assert patch(uploader, path, 0, b"01234").status_code == 204
    assert wait_until(lambda: timezone.now() >= upload_request.expires_at, 5)
    assert patch(uploader, path, 5, b"56789").status_code == 410
    refused = uploader.post(
        tus_endpoint(upload_request),
        HTTP_TUS_RESUMABLE="1.0.0",
        HTTP_UPLOAD_LENGTH="3",
        HTTP_UPLOAD_METADATA=metadata(filename="after.bin"),
    )
    assert refused.status_code == 410
