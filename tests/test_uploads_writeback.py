"""A chunk's bytes are handed to the disk as they arrive (storage.writeback),
every STEP bytes, in ranges that follow one another; the closing
fdatasync is still what makes the offset true."""

import os
import sys

import pytest

from storage import writeback
from tests.test_uploads_support import new_upload, patch
from uploads import writing

pytestmark = pytest.mark.django_db


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sync_file_range is Linux's")
def test_the_kernel_call_is_found_and_accepts_a_real_file(tmp_path):
    assert writeback.available()
    path = tmp_path / "part"
    path.write_bytes(b"x" * 100_000)
    fd = os.open(path, os.O_WRONLY)
    try:
        writeback.start_writeback(fd, 0, 100_000)  # a failure would only be logged: check the call itself
        assert writeback._sync_file_range(fd, 0, 100_000, writeback.SYNC_FILE_RANGE_WRITE) == 0
    finally:
        os.close(fd)


def test_a_chunk_is_handed_to_the_disk_in_steps_then_synced(alice_client, monkeypatch):
    calls = []
    monkeypatch.setattr(writeback, "STEP", 1000)
    monkeypatch.setattr(writing, "READ_SIZE", 300)
    monkeypatch.setattr(writeback, "start_writeback", lambda fd, offset, length: calls.append((offset, length)))
    synced = []
    real_fdatasync = os.fdatasync
    monkeypatch.setattr(writing.os, "fdatasync", lambda fd: (synced.append(fd), real_fdatasync(fd)))
    path = new_upload(alice_client, 5000)

    assert patch(alice_client, path, 0, b"a" * 2500).status_code == 204
    # 300-byte pieces: handed over at 1200 and 2400 written; the last 100 wait for the sync.
    assert calls == [(0, 1200), (1200, 1200)]
    assert len(synced) == 1

    calls.clear()
    assert patch(alice_client, path, 2500, b"b" * 2500).status_code == 204
    assert calls == [(2500, 1200), (3700, 1200)]  # from the chunk's own start
    assert len(synced) == 2
