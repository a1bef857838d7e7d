"""An upload's rule of life, as the database asks it (upload_open_q, due) and as a
row in hand does (Upload.is_open), agree around its deadline."""

import stat
from datetime import timedelta

import pytest

from tests.test_uploads_support import new_upload
from uploads.models import (
    WRITER_LENGTH,
    Upload,
    create_partial_file,
    deadlines_before,
    partial_dir,
    partial_path,
    remove_upload,
    upload_open_q,
)
from uploads.signals import upload_removed

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("offset", [timedelta(microseconds=-1), timedelta(0), timedelta(microseconds=1)])
def test_the_rule_in_python_and_in_the_database_agree_around_the_deadline(alice_client, offset):
    new_upload(alice_client, 10)
    upload = Upload.objects.get()
    now = upload.expires_at + offset
    open_in_database = Upload.objects.filter(upload_open_q(now)).exists()
    assert upload.is_open(now) is open_in_database
    assert Upload.objects.due(now).exists() is not open_in_database  # nobody writes it
    assert open_in_database is (offset < timedelta(0))  # at the deadline it is over


def test_it_keeps_a_writers_claim_until_the_very_end_of_it(alice_client):
    new_upload(alice_client, 10)
    upload = Upload.objects.get()
    until = upload.expires_at + timedelta(seconds=1)
    Upload.objects.filter(pk=upload.pk).update(writer="w" * WRITER_LENGTH, writing_until=until)
    assert not Upload.objects.due(until).exists()  # the claim holds at its end
    assert Upload.objects.due(until + timedelta(microseconds=1)).exists()


def test_it_lists_for_the_daemon_only_the_deadlines_before_the_given_time(alice_client):
    new_upload(alice_client, 10)
    upload = Upload.objects.get()
    assert deadlines_before(upload.expires_at) == []
    later = upload.expires_at + timedelta(microseconds=1)
    assert deadlines_before(later) == [(upload.pk, upload.expires_at.timestamp())]


def test_it_tells_the_listeners_an_unfinished_upload_was_removed_unfinished(alice_client):
    new_upload(alice_client, 10)
    heard = []

    def listener(sender, upload_id, length, finished, **kwargs):
        heard.append((upload_id, length, finished))

    upload_removed.connect(listener)
    try:
        upload = Upload.objects.get()
        remove_upload(upload)
    finally:
        upload_removed.disconnect(listener)
    assert heard == [(upload.pk, 10, False)]


def test_it_makes_the_partial_folders_and_file_private_when_django_sets_no_modes(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.FILE_UPLOAD_PERMISSIONS = None
    settings.FILE_UPLOAD_DIRECTORY_PERMISSIONS = None
    create_partial_file("an-upload")
    assert stat.S_IMODE(partial_dir().stat().st_mode) == 0o700
    assert stat.S_IMODE(partial_dir().parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(partial_path("an-upload").stat().st_mode) == 0o600


def test_it_makes_a_partial_file_when_another_upload_made_the_folders_between_its_look_and_its_mkdir(
    settings, tmp_path, monkeypatch
):
    # Two first uploads at once: both look, see no folder, and one makes it
    # before the other does. The second must not fail on the folder now there.
    settings.MEDIA_ROOT = str(tmp_path / "media")
    create_partial_file("the-first")
    monkeypatch.setattr(type(partial_dir()), "is_dir", lambda path: False)  # what the second saw
    create_partial_file("the-second")
    assert partial_path("the-second").is_file()
