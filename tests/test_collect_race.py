"""Uploaders racing through one upload request, in threads with their own
database connections (as separate processes would have), through Django's
test client: its limits and its owner's quota let exactly as many uploads
start as fit, and its owner closing it while uploads start leaves nothing
going through it, and nothing finishing after the close."""

import threading
import time
from datetime import timedelta

import pytest
from django.db import DatabaseError, connection, transaction
from django.utils import timezone
from rest_framework.test import APIClient

from collect.ending import end_if_due
from collect.models import ReceivedFile, UploadRequest
from sharing.models import SharingPolicy, StorageAccount, StoredFile
from tests.helpers import in_threads, wait_until
from tests.test_collect_api import endpoint, make_request
from tests.test_uploads_support import TUS, create, metadata, patch, path_of, upload_id
from uploads.models import Upload, partial_dir, remove_if_due

pytestmark = pytest.mark.django_db(transaction=True)


def uploader() -> APIClient:
    """A client of its own that answers a 500 rather than re-raise its error:
    every test client hears of every request's error (one signal), its own
    or another thread's."""
    return APIClient(raise_request_exception=False)


def answered(send) -> int:
    """The answer's status, 500 included (which the suite's no_server_errors
    fixture turns into an AssertionError)."""
    try:
        return send().status_code
    except AssertionError:
        return 500


def create_through(made: dict, length: int, body: bytes | None = None) -> int:
    """One uploader starts an upload through the request's link."""
    return answered(
        lambda: create(uploader(), length, metadata(filename="part.bin"), body=body, endpoint=endpoint(made))
    )


def places(made: dict) -> tuple[int, int]:
    upload_request = UploadRequest.objects.get(pk=made["id"])
    return upload_request.files_taken, upload_request.bytes_taken


def account(user) -> StorageAccount:
    return StorageAccount.objects.get(pk=user.pk)


def test_forty_uploaders_racing_for_five_files_make_five(alice, alice_client):
    made = make_request(alice_client, max_files=5)
    statuses = in_threads(lambda: create_through(made, 10), 40)
    assert sorted(statuses) == [201] * 5 + [413] * 35
    assert places(made) == (5, 50)
    assert ReceivedFile.objects.filter(request_id=made["id"]).count() == 5
    assert Upload.objects.count() == 5
    assert account(alice).reserved_bytes == 50
    assert len(list(partial_dir().glob("*"))) == 5  # the refused left no partial file behind


def test_twenty_uploaders_racing_for_fiftyfive_bytes_make_five_of_ten(alice, alice_client):
    made = make_request(alice_client, max_bytes=55)
    statuses = in_threads(lambda: create_through(made, 10), 20)
    assert sorted(statuses) == [201] * 5 + [413] * 15
    assert places(made) == (5, 50)
    assert ReceivedFile.objects.filter(request_id=made["id"]).count() == 5
    assert Upload.objects.count() == 5


def test_twenty_uploaders_racing_for_the_owners_quota_make_as_many_as_fit(alice, alice_client):
    SharingPolicy.objects.update_or_create(pk=SharingPolicy.SINGLETON_ID, defaults={"default_quota_bytes": 100})
    # A byte limit past the quota: the owner allowed strangers all of it, so the quota decides
    # (without one strangers get half: test_collect_strangers_race.py).
    made = make_request(alice_client, max_bytes=1000)
    statuses = in_threads(lambda: create_through(made, 10), 20)
    assert sorted(statuses) == [201] * 10 + [413] * 10
    assert account(alice).reserved_bytes == 100
    # A creation the quota refused took no place in the request: its transaction rolled back.
    assert places(made) == (10, 100)
    assert ReceivedFile.objects.filter(request_id=made["id"]).count() == 10
    assert Upload.objects.count() == 10


UPLOADERS = 30
BODY = b"0123456789"


def test_closing_while_uploads_start_leaves_none_going_and_none_finishing_after(alice, alice_client, settings):
    settings.REQUEST_UNFINISHED_UPLOADS = UPLOADERS  # every one may be unfinished at once here
    made = make_request(alice_client)
    closed_at = []

    def race(n: int) -> int | None:
        if n == 0:
            # The owner closes once some uploads went through: some before, some after.
            assert wait_until(lambda: ReceivedFile.objects.filter(request_id=made["id"]).exists(), 10, interval=0.001)
            owner = uploader()
            owner.force_authenticate(alice)
            status = answered(lambda: owner.post(f"/api/upload-requests/{made['id']}/close/"))
            closed_at.append(timezone.now())  # its transaction committed before its answer
            return status
        # Created with the whole file as its body: it finishes in the same request.
        time.sleep(n * 0.002)
        return create_through(made, len(BODY), body=BODY)

    close_status, *statuses = in_threads(race, UPLOADERS + 1, numbered=True)
    assert close_status == 200
    closed = UploadRequest.objects.get(pk=made["id"])
    assert closed.end_reason == "closed"
    assert closed_at[0] >= closed.ended_at

    # An upload that started before the close finished (201) or was removed by
    # it before its bytes came (404); one that came after it was refused (410).
    # Which of them happen varies: on SQLite all may have started first.
    assert set(statuses) <= {201, 404, 410}, statuses
    assert not Upload.objects.exists()
    assert list(partial_dir().glob("*")) == []

    received = ReceivedFile.objects.filter(request_id=made["id"])
    assert all(r.arrived for r in received)  # the unfinished were removed, their places given back
    assert received.count() == statuses.count(201) == StoredFile.objects.filter(owner=alice).count()
    assert places(made) == (received.count(), received.count() * len(BODY))
    assert all(r.finished_at <= closed_at[0] for r in received), "a file finished after the close committed"
    assert (account(alice).used_bytes, account(alice).reserved_bytes) == (received.count() * len(BODY), 0)


def waiting_for_a_lock(model) -> int:
    """How many transactions wait for a lock, their statement on `model`'s table."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND query LIKE %s",
            [f"%{model._meta.db_table}%"],
        )
        return cursor.fetchone()[0]


def waiting_for_any_lock() -> int:
    """How many transactions wait for a lock, on any table."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0]


@pytest.mark.postgres
def test_no_file_is_recorded_as_finished_after_the_request_ended(alice, alice_client):
    """The close has stamped ended_at and is removing the request's uploads
    one by one (the newest first), held at one of them; meanwhile another
    upload's last chunk comes. It must be refused, or be recorded as
    finished no later than the request's end."""
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: on SQLite the close holds the one write lock until it commits")
    made = make_request(alice_client)
    finishing = path_of(create(APIClient(), len(BODY), metadata(filename="b.bin"), endpoint=endpoint(made)))
    held = upload_id(path_of(create(APIClient(), len(BODY), metadata(filename="a.bin"), endpoint=endpoint(made))))
    locked, release, answers = threading.Event(), threading.Event(), []

    def hold():  # another writer of the newest upload: the close waits for it
        with transaction.atomic():
            list(Upload.objects.select_for_update().filter(pk=held))
            locked.set()
            release.wait(30)

    def close():
        owner = APIClient()
        owner.force_authenticate(alice)
        answers.append(owner.post(f"/api/upload-requests/{made['id']}/close/").status_code)

    threads = [threading.Thread(target=_closing, args=(work,)) for work in (hold, close)]
    threads[0].start()
    try:
        assert locked.wait(10)
        threads[1].start()
        assert wait_until(lambda: waiting_for_a_lock(Upload) == 1, 10), "the close did not reach the held upload"
        last_chunk = patch(APIClient(), finishing, 0, BODY).status_code
    finally:
        release.set()
        for thread in threads:
            thread.join(30)
    assert answers == [200]
    closed = UploadRequest.objects.get(pk=made["id"])
    assert not Upload.objects.exists()
    received = ReceivedFile.objects.filter(request_id=made["id"], finished_at__isnull=False).first()
    if last_chunk == 204:
        assert received is not None
        assert received.finished_at <= closed.ended_at, (
            f"finished {(received.finished_at - closed.ended_at).total_seconds() * 1000:.1f} ms after the request ended"
        )
    else:
        assert last_chunk in (404, 410)
        assert received is None


def _closing(work) -> None:
    try:
        work()
    finally:
        connection.close()


# What an uploader may do to another upload of the request while the close
# removes them: each takes its upload's row, then the owner's storage account.
OTHER_WRITERS = {
    "finish": lambda path: patch(uploader(), path, 0, BODY),  # the last chunk: stored, charged
    "terminate": lambda path: uploader().delete(path, **TUS),  # removed, its space given back
}


@pytest.mark.postgres
@pytest.mark.parametrize("other", OTHER_WRITERS)
def test_closing_while_an_uploader_finishes_or_terminates_another_upload_does_not_deadlock(alice, alice_client, other):
    """The owner's storage account is busy (another of her transactions);
    the close waits to give the space of the upload it removes first back;
    meanwhile an uploader finishes (or terminates) the other upload. Locks
    taken in one order (request, uploads, account) make it wait behind the
    close, never hold what the close waits for: when the account is free
    both go through."""
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: on SQLite the close holds the one write lock until it commits")
    made = make_request(alice_client)
    older = path_of(create(APIClient(), len(BODY), metadata(filename="b.bin"), endpoint=endpoint(made)))
    create(APIClient(), len(BODY), metadata(filename="a.bin"), endpoint=endpoint(made))  # the newest: removed first
    locked, release, answers = threading.Event(), threading.Event(), {}

    def hold():
        with transaction.atomic():
            list(StorageAccount.objects.select_for_update().filter(pk=alice.pk))
            locked.set()
            release.wait(30)

    def close():
        owner = uploader()
        owner.force_authenticate(alice)
        answers["close"] = answered(lambda: owner.post(f"/api/upload-requests/{made['id']}/close/"))

    def write():
        answers[other] = answered(lambda: OTHER_WRITERS[other](older))

    holder, closer, writer = (threading.Thread(target=_closing, args=(work,)) for work in (hold, close, write))
    holder.start()
    try:
        assert locked.wait(10)
        closer.start()
        assert wait_until(lambda: waiting_for_a_lock(StorageAccount) == 1, 10), "the close did not wait"
        writer.start()
        # Behind the close (for the request's row or the upload's, which it
        # takes first), never holding one the close waits for.
        assert wait_until(lambda: waiting_for_any_lock() == 2, 10), f"the {other} did not wait"
    finally:
        release.set()
        for thread in (holder, closer, writer):
            thread.join(30)
    assert answers["close"] == 200, answers
    assert answers[other] in (204, 404, 410), answers
    assert not Upload.objects.exists()
    assert account(alice).reserved_bytes == 0


@pytest.mark.postgres
def test_two_daemons_ending_a_request_and_removing_its_upload_at_their_one_deadline_do_not_deadlock(
    alice, alice_client
):
    """On PostgreSQL every expiry daemon works at once: at the request's
    deadline (its uploads' too: ends_by) one ends the request while
    another removes one of its uploads, the owner's account busy meanwhile."""
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: on SQLite one daemon works at a time (the lease), and one writer")
    made = make_request(alice_client)
    older = upload_id(path_of(create(APIClient(), len(BODY), metadata(filename="b.bin"), endpoint=endpoint(made))))
    create(APIClient(), len(BODY), metadata(filename="a.bin"), endpoint=endpoint(made))  # the newest: removed first
    past = timezone.now() - timedelta(seconds=1)
    UploadRequest.objects.filter(pk=made["id"]).update(expires_at=past)
    Upload.objects.update(expires_at=past, ends_by=past)
    locked, release, outcomes = threading.Event(), threading.Event(), {}

    def hold():
        with transaction.atomic():
            list(StorageAccount.objects.select_for_update().filter(pk=alice.pk))
            locked.set()
            release.wait(30)

    def outcome(name, step):
        try:
            outcomes[name] = step()
        except DatabaseError as error:
            outcomes[name] = str(error).splitlines()[0]

    def end():
        outcome("end", lambda: end_if_due(made["id"]))

    def remove():
        outcome("remove", lambda: remove_if_due(older))

    holder, ender, remover = (threading.Thread(target=_closing, args=(work,)) for work in (hold, end, remove))
    holder.start()
    try:
        assert locked.wait(10)
        ender.start()
        assert wait_until(lambda: waiting_for_a_lock(StorageAccount) == 1, 10), "the end did not wait"
        remover.start()
        assert wait_until(lambda: waiting_for_any_lock() == 2, 10), "the removal did not wait"
    finally:
        release.set()
        for thread in (holder, ender, remover):
            thread.join(30)
    assert outcomes["end"] is True, outcomes
    assert outcomes["remove"] in (True, False), outcomes
    assert not Upload.objects.exists()
    assert account(alice).reserved_bytes == 0
    assert places(made) == (0, 0)
