"""The migration that adds each stored file's CRC-32 reads the bytes already
stored, on a real database; a file whose bytes are gone keeps NULL."""

import zlib

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone

from sharing.models import StoredFile
from tests.migrating import back_to_the_latest_schema, migrate  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("back_to_the_latest_schema")]

BEFORE = [("sharing", "0008_share_message")]
AFTER = [("sharing", "0009_file_crc32")]


def test_existing_files_get_the_crc32_of_their_bytes(alice, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    data = b"bytes stored before the column came\n" * 1000
    old = migrate(BEFORE)
    try:
        stored_file = old.get_model("sharing", "StoredFile")
        path = default_storage.save("files/old.bin", ContentFile(data))
        kept = stored_file.objects.create(
            owner_id=alice.pk, name="old.bin", content=path, size=len(data), sha256="0" * 64, created_at=timezone.now()
        )
        lost = stored_file.objects.create(
            owner_id=alice.pk,
            name="lost.bin",
            content="files/lost.bin",
            size=3,
            sha256="1" * 64,
            created_at=timezone.now(),
        )
    finally:
        new = migrate(AFTER)
    files = new.get_model("sharing", "StoredFile").objects
    assert files.get(pk=kept.pk).crc32 == zlib.crc32(data)
    assert files.get(pk=lost.pk).crc32 is None


def test_an_upload_records_its_crc32_in_the_same_pass(alice_client):
    data = bytes(range(256)) * 3000
    response = alice_client.post("/api/files/", {"file": ContentFile(data, name="a.bin")}, format="multipart")
    assert response.status_code == 201, response.content
    stored = StoredFile.objects.get()
    assert stored.crc32 == zlib.crc32(data)
    assert stored.size == len(data)
