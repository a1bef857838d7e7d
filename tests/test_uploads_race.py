"""Races on one upload, in threads with their own database connections (as
separate processes would have), through Django's test client: many
appends at one offset while the winner is still reading its body, and many
finishers of one complete upload. The real-server versions are in
tests/test_uploads_tuspy.py (fault tests)."""

import io
import itertools
import threading
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from sharing.models import StorageAccount, StoredFile, quotas
from tests.helpers import in_threads
from tests.test_uploads_support import digests, head, new_upload, patch, upload_id
from uploads.models import Upload, partial_path

pytestmark = pytest.mark.django_db(transaction=True)

RACERS = 8


class HeldBody(io.RawIOBase):
    """A body whose first read waits until `release` is set: its request,
    if it wins the claim, is still reading while the others try."""

    def __init__(self, data: bytes, release: threading.Event):
        self.data, self.release, self.sent = data, release, 0

    def read(self, size=-1):
        self.release.wait(10)
        piece = self.data[self.sent : self.sent + (size if size >= 0 else len(self.data))]
        self.sent += len(piece)
        return piece


def client_of(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_appends_racing_at_one_offset_make_one_winner(alice, alice_client):
    path = new_upload(alice_client, 2000)
    release, answered, lock = threading.Event(), [], threading.Lock()
    numbers = itertools.count(1)

    def append():
        mine = next(numbers)  # each racer's own bytes
        body = bytes([mine]) * 1000
        response = patch(client_of(alice), path, 0, body, **{"wsgi.input": HeldBody(body, release)})
        with lock:
            answered.append(response.status_code)
            if len(answered) == RACERS - 1:
                release.set()  # every loser has its answer: let the winner read on
        return response.status_code, mine

    results = in_threads(append, RACERS)
    statuses = sorted(status for status, _ in results)
    assert statuses == [204] + [409] * (RACERS - 1)
    winner = next(mine for status, mine in results if status == 204)
    assert Upload.objects.get().offset == 1000
    assert Upload.objects.get().writer is None
    assert partial_path(upload_id(path)).read_bytes() == bytes([winner]) * 1000


def test_a_loser_is_told_another_request_is_writing(alice, alice_client):
    path = new_upload(alice_client, 10)
    release = threading.Event()
    winner = threading.Thread(
        target=lambda: patch(client_of(alice), path, 0, b"01234", **{"wsgi.input": HeldBody(b"01234", release)})
    )
    winner.start()
    try:
        assert wait_for_claim(upload_id(path))
        response = patch(client_of(alice), path, 0, b"abcde")
        assert response.status_code == 409
        assert response.json() == {
            "detail": "Another request is writing to this upload: ask for its offset with HEAD and resume from there."
        }
        assert head(client_of(alice), path)["Upload-Offset"] == "0"  # HEAD does not wait for the writer
    finally:
        release.set()
        winner.join(10)
    assert partial_path(upload_id(path)).read_bytes() == b"01234"


def wait_for_claim(pk: str) -> bool:
    deadline = timezone.now() + timedelta(seconds=10)
    while timezone.now() < deadline:
        if Upload.objects.filter(pk=pk, writer__isnull=False).exists():
            return True
    return False


def test_finishers_racing_on_one_complete_upload_make_one_file(alice):
    now = timezone.now()
    quotas.reserve(alice.pk, 300_000)  # as creating it through the API does
    upload = Upload.objects.create(
        owner=alice,
        length=300_000,
        offset=300_000,
        filename="stranded.bin",
        expires_at=now + timedelta(hours=1),
        writer="a-dead-finisher",
        writing_until=now - timedelta(seconds=1),
    )
    data = bytes(range(256)) * 1171 + b"x" * 224
    partial_path(upload.pk).parent.mkdir(parents=True, exist_ok=True)
    partial_path(upload.pk).write_bytes(data)

    answers = in_threads(lambda: head(client_of(alice), f"/api/uploads/{upload.pk}"), RACERS)
    assert {response.status_code for response in answers} == {200}
    stored = StoredFile.objects.get()
    assert (stored.sha256, stored.crc32) == digests(data)
    assert Upload.objects.get().file == stored
    assert head(client_of(alice), f"/api/uploads/{upload.pk}")["Upload-File"] == f"/api/files/{stored.pk}/"
    account = StorageAccount.objects.get(pk=alice.pk)
    assert (account.used_bytes, account.reserved_bytes) == (300_000, 0)  # counted once
