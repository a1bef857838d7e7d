"""A tus upload's life after creation: checksums, its deadline, the finish
into a stored file (exactly once), a client that goes away mid-chunk, a
writer that holds or loses its claim, and removal (due, remove_upload)."""

import io
import random
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from freezegun import freeze_time

from sharing.models import StoredFile, delete_file
from tests.test_uploads_support import (
    TUS,
    checksum,
    create,
    digests,
    head,
    metadata,
    new_upload,
    patch,
    path_of,
    upload_id,
)
from uploads import endpoints, writing
from uploads.finishing import finish
from uploads.models import Upload, partial_path, remove_upload
from uploads.writing import CLAIM_TTL, claim

pytestmark = pytest.mark.django_db

DATA = random.Random(7).randbytes(300_000)


def listed(client) -> list[dict]:
    return client.get("/api/files/").json()["results"]


@pytest.mark.parametrize("algorithm", ["sha1", "sha256", "md5"])
def test_a_chunk_with_its_right_checksum_is_kept(algorithm, alice_client):
    path = new_upload(alice_client, 10)

    response = patch(alice_client, path, 0, b"01234", HTTP_UPLOAD_CHECKSUM=checksum(algorithm, b"01234"))
    assert response.status_code == 204
    assert response["Upload-Offset"] == "5"


def test_a_checksum_mismatch_is_460_and_the_chunk_is_discarded(alice_client):
    path = new_upload(alice_client, 10)
    patch(alice_client, path, 0, b"01234")

    response = patch(alice_client, path, 5, b"56789", HTTP_UPLOAD_CHECKSUM=checksum("sha1", b"5678X"))
    assert response.status_code == 460
    assert response.reason_phrase == "Checksum Mismatch"
    assert response["Tus-Resumable"] == "1.0.0"
    assert response.json() == {
        "detail": "The chunk's sha1 does not match Upload-Checksum: its bytes were discarded; send it again."
    }
    assert head(alice_client, path)["Upload-Offset"] == "5"
    assert listed(alice_client) == []
    again = patch(alice_client, path, 5, b"56789", HTTP_UPLOAD_CHECKSUM=checksum("sha1", b"56789"))
    assert again.status_code == 204
    assert listed(alice_client)[0]["sha256"] == digests(b"0123456789")[0]


@pytest.mark.parametrize(
    ("header", "detail"),
    [
        ("crc32 AAAAAA==", "Upload-Checksum: the algorithm 'crc32' is not supported; use one of sha1, sha256, md5."),
        ("sha1 not-base64!", "Upload-Checksum: the digest is not a base64 sha1 digest."),
        (checksum("md5", b"x").replace("md5", "sha1"), "Upload-Checksum: the digest is not a base64 sha1 digest."),
    ],
)
def test_an_unusable_checksum_is_400(header, detail, alice_client):
    path = new_upload(alice_client, 10)

    response = patch(alice_client, path, 0, b"01234", HTTP_UPLOAD_CHECKSUM=header)
    assert response.status_code == 400
    assert response.json() == {"detail": detail}
    assert Upload.objects.get().offset == 0


def test_the_deadline_passes_and_the_upload_is_gone(alice_client, settings):
    settings.UPLOAD_EXPIRES_AFTER = 3600
    with freeze_time("2030-01-01 12:00:00") as clock:
        path = new_upload(alice_client, 10)
        assert head(alice_client, path)["Upload-Expires"] == "Tue, 01 Jan 2030 13:00:00 GMT"
        clock.tick(timedelta(minutes=50))
        moved = patch(alice_client, path, 0, b"01")  # progress moves the deadline
        assert moved["Upload-Expires"] == "Tue, 01 Jan 2030 13:50:00 GMT"
        assert patch(alice_client, path, 2, b"").status_code == 204  # no bytes, no move
        clock.tick(timedelta(minutes=50))
        assert head(alice_client, path).status_code == 200
        clock.tick(timedelta(minutes=10))  # 13:50 exactly
        for response in (head(alice_client, path), patch(alice_client, path, 2, b"23")):
            assert response.status_code == 410
            assert response["Tus-Resumable"] == "1.0.0"
        assert patch(alice_client, path, 2, b"23").json() == {
            "detail": "The upload expired at Tue, 01 Jan 2030 13:50:00 GMT."
        }
        assert Upload.objects.get().offset == 2
        assert alice_client.delete(path, **TUS).status_code == 204  # terminating it still works


def test_finishing_stores_the_file_like_a_multipart_upload(alice_client):
    meta = metadata(filename="../Quarterly\nreport.CSV", filetype="Text/CSV; charset=utf-8")
    path = path_of(create(alice_client, len(DATA), meta))

    for start in range(0, len(DATA), 64 * 1024):
        assert listed(alice_client) == []  # nothing listed before the last byte
        last = patch(alice_client, path, start, DATA[start : start + 64 * 1024])
        assert last.status_code == 204
    stored = StoredFile.objects.get()
    assert last["Upload-File"] == f"/api/files/{stored.pk}/"
    assert last["Upload-Offset"] == str(len(DATA))
    sha256, crc32 = digests(DATA)
    # The name and type rules of every upload: the path and control characters go, the type is lowercased.
    assert (stored.name, stored.content_type) == ("Quarterlyreport.CSV", "text/csv; charset=utf-8")
    assert stored.size == len(DATA)
    assert (stored.sha256, stored.crc32, stored.owner.username) == (sha256, crc32, "alice")
    assert stored.delete_when_unshared is False
    assert stored.content.read() == DATA
    assert [item["id"] for item in listed(alice_client)] == [stored.pk]
    assert not partial_path(upload_id(path)).exists()
    # A client that lost the last answer learns the file from HEAD.
    state = head(alice_client, path)
    assert (state.status_code, state["Upload-Offset"], state["Upload-Length"]) == (200, str(len(DATA)), str(len(DATA)))
    assert state["Upload-File"] == last["Upload-File"]
    again = patch(alice_client, path, len(DATA), b"")
    assert (again.status_code, again["Upload-File"]) == (204, last["Upload-File"])
    assert patch(alice_client, path, len(DATA), b"x").status_code == 413
    assert patch(alice_client, path, 0, b"x").status_code == 409
    assert StoredFile.objects.count() == 1


def test_the_type_is_guessed_from_the_name_and_the_file_can_be_ephemeral(alice_client):
    path = new_upload(alice_client, 4, filename="notes.txt", delete_when_unshared="true")

    response = patch(alice_client, path, 0, b"abcd")
    stored = StoredFile.objects.get()
    assert response["Upload-File"] == f"/api/files/{stored.pk}/"
    assert (stored.name, stored.content_type, stored.delete_when_unshared) == ("notes.txt", "text/plain", True)


def test_one_creation_request_can_carry_the_whole_file(alice_client):
    response = alice_client.generic(
        "POST",
        "/api/uploads/",
        b"tiny",
        content_type="application/offset+octet-stream",
        **TUS,
        HTTP_UPLOAD_LENGTH="4",
        HTTP_UPLOAD_METADATA=metadata(filename="t.bin"),
        HTTP_UPLOAD_CHECKSUM=checksum("sha256", b"tiny"),
    )
    assert response.status_code == 201
    assert response["Upload-Offset"] == "4"
    assert response["Upload-File"] == f"/api/files/{StoredFile.objects.get().pk}/"


class Cut(io.RawIOBase):
    """A request body whose client goes away after `keep` bytes."""

    def __init__(self, data: bytes, keep: int):
        self.data, self.keep, self.sent = data, keep, 0

    def read(self, size=-1):
        if self.sent >= self.keep:
            raise OSError("connection reset by peer")
        piece = self.data[self.sent : min(self.keep, self.sent + (size if size >= 0 else len(self.data)))]
        self.sent += len(piece)
        return piece


def cut_patch(client, path, offset, data, keep, **headers):
    return patch(client, path, offset, data, **headers, **{"wsgi.input": Cut(data, keep)})


def test_a_client_gone_mid_chunk_keeps_the_bytes_that_arrived(alice_client):
    path = new_upload(alice_client, len(DATA))

    cut_patch(alice_client, path, 0, DATA[:200_000], keep=123_456)
    assert head(alice_client, path)["Upload-Offset"] == "123456"
    assert patch(alice_client, path, 123_456, DATA[123_456:]).status_code == 204
    assert StoredFile.objects.get().sha256 == digests(DATA)[0]


def test_a_client_gone_mid_chunk_with_a_checksum_keeps_nothing(alice_client):
    path = new_upload(alice_client, len(DATA))
    chunk = DATA[:200_000]

    cut_patch(alice_client, path, 0, chunk, keep=123_456, HTTP_UPLOAD_CHECKSUM=checksum("sha1", chunk))
    assert head(alice_client, path)["Upload-Offset"] == "0"
    assert Upload.objects.get().writer is None


def test_a_live_claim_makes_others_wait_and_a_lapsed_one_is_taken_over(alice_client):
    path = new_upload(alice_client, 10)
    with freeze_time(timezone.now()) as clock:
        assert claim(upload_id(path), Upload.objects.get().owner, 0, timezone.now()) is not None
        response = patch(alice_client, path, 0, b"0123")
        assert response.status_code == 409
        assert response.json()["detail"].startswith("Another request is writing to this upload")
        clock.tick(CLAIM_TTL + timedelta(seconds=1))  # the claimer died
        assert patch(alice_client, path, 0, b"0123").status_code == 204
    assert Upload.objects.get().writer is None


def test_a_complete_upload_whose_finisher_died_is_finished_by_head(alice_client):
    path = new_upload(alice_client, 4, filename="late.txt")
    partial_path(upload_id(path)).write_bytes(b"done")
    lapsed = timezone.now() - timedelta(seconds=1)
    Upload.objects.update(offset=4, writer="dead-finisher", writing_until=lapsed)

    state = head(alice_client, path)
    stored = StoredFile.objects.get()
    assert (state["Upload-Offset"], state["Upload-File"]) == ("4", f"/api/files/{stored.pk}/")
    assert (stored.name, stored.size) == ("late.txt", 4)
    assert head(alice_client, path)["Upload-File"] == state["Upload-File"]
    assert StoredFile.objects.count() == 1


def test_of_two_finishers_one_file_stays(alice_client, django_capture_on_commit_callbacks):
    path = new_upload(alice_client, 4)
    partial_path(upload_id(path)).write_bytes(b"done")
    Upload.objects.update(offset=4)
    upload = Upload.objects.select_related("owner").get()
    now = timezone.now()
    first = claim(upload.pk, upload.owner, 4, now)
    Upload.objects.update(writing_until=now - timedelta(seconds=1))  # the first one stalls past its claim
    second = claim(upload.pk, upload.owner, 4, now)

    with django_capture_on_commit_callbacks(execute=True):
        assert finish(upload, second) is not None
        partial_path(upload.pk).write_bytes(b"done")  # as the stalled one still sees them
        assert finish(upload, first) is None
    assert StoredFile.objects.count() == 1
    assert Upload.objects.get().file == StoredFile.objects.get()


def test_due_uploads_and_their_removal(alice_client, settings, django_capture_on_commit_callbacks):
    settings.UPLOAD_EXPIRES_AFTER = 60
    old, held, fresh = (new_upload(alice_client, 10) for _ in range(3))
    now = timezone.now()
    Upload.objects.filter(pk__in=[upload_id(old), upload_id(held)]).update(expires_at=now - timedelta(seconds=1))
    Upload.objects.filter(pk=upload_id(held)).update(writer="someone", writing_until=now + timedelta(seconds=5))

    due = list(Upload.objects.due(now))
    assert [upload.pk for upload in due] == [upload_id(old)]
    assert {u.pk for u in Upload.objects.due(now + timedelta(seconds=6))} == {upload_id(old), upload_id(held)}
    assert {u.pk for u in Upload.objects.due(now + timedelta(seconds=61))} == {upload_id(p) for p in (old, held, fresh)}
    with django_capture_on_commit_callbacks(execute=True):
        remove_upload(due[0])
        remove_upload(due[0])  # twice: nothing more happens
    assert not partial_path(upload_id(old)).exists()
    assert Upload.objects.count() == 2
    assert partial_path(upload_id(fresh)).exists()


def test_a_deleted_owner_takes_the_partial_bytes(alice, alice_client, django_capture_on_commit_callbacks):
    path = new_upload(alice_client, 10)

    with django_capture_on_commit_callbacks(execute=True):
        get_user_model().objects.filter(pk=alice.pk).delete()
    assert not partial_path(upload_id(path)).exists()


def test_a_finished_uploads_file_deleted_leaves_an_answer_without_it(alice_client):
    path = new_upload(alice_client, 4)
    patch(alice_client, path, 0, b"abcd")

    delete_file(StoredFile.objects.get())
    state = head(alice_client, path)
    assert (state.status_code, state["Upload-Offset"]) == (200, "4")
    assert "Upload-File" not in state
    assert Upload.objects.get().finished_at is not None


def test_a_claim_holds_only_at_the_uploads_offset_before_its_deadline(alice_client, settings):
    """The claim's own conditions, not the view's earlier look at the row:
    another node may move the offset (or the clock the deadline) in between."""
    path = new_upload(alice_client, 10)
    upload = Upload.objects.select_related("owner").get()
    Upload.objects.update(offset=4)
    now = timezone.now()

    assert claim(upload.pk, upload.owner, 0, now) is None  # a stale offset
    assert claim(upload.pk, upload.owner, 4, upload.expires_at) is None  # at the deadline
    Upload.objects.update(finished_at=now, offset=10)
    assert claim(upload.pk, upload.owner, 10, now) is None  # finished
    Upload.objects.update(finished_at=None)
    assert claim(upload.pk, upload.owner, 10, now) is not None
    assert head(alice_client, path).status_code == 200


def test_an_append_that_lost_the_offset_to_another_node_writes_nothing(alice_client, monkeypatch):
    path = new_upload(alice_client, 10)
    real_claim = endpoints.claim

    def after_another_node(upload_pk, owner, offset, now=None):
        # Between this request's look at the row and its claim, another
        # node appended two bytes and committed.
        partial_path(upload_pk).write_bytes(b"AB")
        Upload.objects.filter(pk=upload_pk).update(offset=2)
        return real_claim(upload_pk, owner, offset, now)

    monkeypatch.setattr(endpoints, "claim", after_another_node)
    response = patch(alice_client, path, 0, b"0123")
    assert response.status_code == 409
    assert response.json()["detail"] == "Upload-Offset is 0 but the upload is at 2: resume from there."
    assert partial_path(upload_id(path)).read_bytes() == b"AB"


def test_an_upload_whose_partial_bytes_are_lost_is_410(alice_client):
    path = new_upload(alice_client, 10)
    partial_path(upload_id(path)).unlink()

    response = patch(alice_client, path, 0, b"0123")
    assert response.status_code == 410
    assert response.json() == {"detail": "The upload's bytes are gone; start it again."}
    assert Upload.objects.get().writer is None  # the claim was let go


@pytest.mark.django_db(transaction=True)
def test_a_claim_judges_the_deadline_by_the_time_read_once_the_lock_is_held(alice_client, settings, monkeypatch):
    """A claim that waited for the write lock past the upload's deadline is
    refused: the time that decides is read after the wait, not before."""
    path = new_upload(alice_client, 10)
    upload = Upload.objects.get()
    past_deadline = upload.expires_at + timedelta(milliseconds=1)
    # As if the wait for the lock ended just after the deadline: locked_now reads the clock then.
    monkeypatch.setattr(writing, "locked_now", lambda rows: (list(rows), past_deadline)[1])
    assert writing.claim(upload_id(path), upload.owner, 0) is None
    monkeypatch.setattr(writing, "locked_now", lambda rows: (list(rows), upload.expires_at - timedelta(seconds=1))[1])
    assert writing.claim(upload_id(path), upload.owner, 0) is not None
