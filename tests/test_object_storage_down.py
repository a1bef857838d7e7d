"""A bucket out of reach (its endpoint down): every request that needs the
file store answers 503 with Retry-After, quickly, never a 500 nor "file
gone"; requests that do not need it go on."""

import time
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone

from sharing.models import Share
from storage.bucket_partials import PART_SIZE
from tests import buckets
from tests.helpers import free_port
from tests.test_uploads_support import TUS

pytestmark = pytest.mark.django_db(transaction=True)

BIG = b"x" * (PART_SIZE + 1)  # past the in-memory upload handler: streamed into the bucket


@pytest.fixture
def stored(bucket_storage, alice, make_file):
    """A file stored while the bucket was up."""
    return make_file(alice, data=b"kept while the bucket was up\n")


@pytest.fixture
def bucket_down(stored, settings):
    """The same storage settings, but nothing listening at the endpoint."""
    dead = f"http://127.0.0.1:{free_port()}"
    settings.STORAGE_URL = settings.STORAGE_URL.replace(buckets.endpoint_of(settings.STORAGE_URL), dead)
    settings.STORAGES = buckets.bucket_storages(settings.STORAGES, settings.STORAGE_URL)
    return stored


def test_a_link_answers_503_not_file_gone(bucket_down):
    share = Share.create_for(file=bucket_down, expires_at=timezone.now() + timedelta(hours=1))
    started = time.monotonic()
    response = Client().get(f"/s/{share.token}")
    assert time.monotonic() - started < 30  # botocore's own timeouts and retries, bounded
    assert (response.status_code, response["Retry-After"]) == (503, "1")
    assert response.content.decode().startswith("The service is busy")
    share.refresh_from_db()
    assert share.total_downloads == 0  # nothing counted for what was not sent


def test_the_api_answers_503_for_a_file_s_bytes_and_an_upload(bucket_down, alice_client):
    content = alice_client.get(f"/api/files/{bucket_down.pk}/content/")
    assert (content.status_code, content["Retry-After"]) == (503, "1")
    assert content.json() == {"detail": "The file store cannot be reached just now; try again in a moment."}
    upload = alice_client.post("/api/files/", {"file": SimpleUploadedFile("big.bin", BIG)}, format="multipart")
    assert upload.status_code == 503
    tus = alice_client.post("/api/uploads/", HTTP_UPLOAD_LENGTH="10", **TUS)
    assert tus.status_code == 503
    assert alice_client.get("/api/files/").status_code == 200  # the database alone still answers


def test_a_page_that_needs_the_store_answers_503(bucket_down, alice_web):
    response = alice_web.post("/files/", {"files": [SimpleUploadedFile("big.bin", BIG)]})
    assert (response.status_code, response["Retry-After"]) == (503, "1")
    assert response.content.decode().startswith("The file store cannot be reached just now")
    french = alice_web.post("/files/", {"files": [SimpleUploadedFile("big.bin", BIG)]}, HTTP_ACCEPT_LANGUAGE="fr")
    assert french.content.decode().startswith("Le stockage des fichiers est injoignable")
    assert alice_web.get("/").status_code == 200
