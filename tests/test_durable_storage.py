"""A stored file is on the disk before its row is listed: the storage syncs
the file and its folder's entry (storage.disk), and a big multipart
upload is handed to the disk as it arrives (storage.upload_handlers)."""

import hashlib
import itertools
import os
import random

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from sharing.models import StoredFile
from storage import disk, writeback

pytestmark = pytest.mark.django_db

# Over FILE_UPLOAD_MAX_MEMORY_SIZE (2.5 MB): the upload goes through a temporary file.
BIG = random.Random(3).randbytes(5 * 1024 * 1024 + 123)


def test_a_big_upload_is_synced_file_and_folder_before_its_row_exists(alice_client, monkeypatch):
    synced = []
    real_fsync = os.fsync

    def noting(fd):
        synced.append((os.readlink(f"/proc/self/fd/{fd}"), StoredFile.objects.count()))
        return real_fsync(fd)

    monkeypatch.setattr(disk.os, "fsync", noting)
    response = alice_client.post("/api/files/", {"file": SimpleUploadedFile("big.bin", BIG)}, format="multipart")
    assert response.status_code == 201, response.content

    stored = StoredFile.objects.get()
    path = stored.content.path
    assert synced == [(path, 0), (os.path.dirname(path), 0)]  # both before the row
    with open(path, "rb") as handle:
        assert hashlib.sha256(handle.read()).hexdigest() == hashlib.sha256(BIG).hexdigest() == stored.sha256


def test_a_big_multipart_upload_is_handed_to_the_disk_in_steps(alice_client, monkeypatch):
    calls = []
    monkeypatch.setattr(writeback, "start_writeback", lambda fd, offset, length: calls.append((offset, length)))
    response = alice_client.post("/api/files/", {"file": SimpleUploadedFile("big.bin", BIG)}, format="multipart")
    assert response.status_code == 201, response.content

    # Contiguous ranges from the start, each at least a step, none past the data.
    assert len(calls) == len(BIG) // writeback.STEP
    assert calls[0][0] == 0
    for (offset, length), (next_offset, _) in itertools.pairwise(calls):
        assert length >= writeback.STEP
        assert offset + length == next_offset
    assert calls[-1][0] + calls[-1][1] <= len(BIG)
    assert StoredFile.objects.get().sha256 == hashlib.sha256(BIG).hexdigest()


def test_a_small_file_saved_by_the_model_is_synced_too(alice, make_file, monkeypatch):
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(
        disk.os, "fsync", lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")), real_fsync(fd))
    )
    stored = make_file(alice)
    assert synced == [stored.content.path, os.path.dirname(stored.content.path)]
