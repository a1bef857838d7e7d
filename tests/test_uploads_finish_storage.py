"""A finished upload's bytes become the stored file by a rename of a hard
link, not a copy (a gigabyte's copy was a third of a tus upload's time), and
by a copy where the file system refuses the link; either way nothing is
left beside the partial file."""

import os

import pytest

from sharing.models import StoredFile
from tests.test_uploads_support import digests, new_upload, patch
from uploads.models import partial_dir, partial_path

pytestmark = pytest.mark.django_db

DATA = bytes(range(256)) * 40


def upload_all_but_the_last_byte(client) -> str:
    path = new_upload(client, len(DATA), filename="kept.bin")
    assert patch(client, path, 0, DATA[:-1]).status_code == 204
    return path


def test_the_stored_file_is_the_partial_files_inode(alice_client):
    path = upload_all_but_the_last_byte(alice_client)
    inode = os.stat(partial_path(path.rstrip("/").rsplit("/", 1)[1])).st_ino
    assert patch(alice_client, path, len(DATA) - 1, DATA[-1:]).status_code == 204
    stored = StoredFile.objects.get()
    assert os.stat(stored.content.path).st_ino == inode  # renamed into place, not written again
    assert (stored.sha256, stored.crc32) == digests(DATA)
    assert list(partial_dir().iterdir()) == []


def test_without_hard_links_the_bytes_are_copied(alice_client, monkeypatch):
    path = upload_all_but_the_last_byte(alice_client)

    def refuse(*args, **kwargs):
        raise OSError("no hard links here")

    monkeypatch.setattr(os, "link", refuse)
    assert patch(alice_client, path, len(DATA) - 1, DATA[-1:]).status_code == 204
    stored = StoredFile.objects.get()
    assert stored.content.read() == DATA
    assert list(partial_dir().iterdir()) == []
