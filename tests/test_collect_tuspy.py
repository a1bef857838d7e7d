"""Uploads through an upload request's link with an independent tus client
(tuspy), against real gunicorn servers on the test's database (on
PostgreSQL two servers, as two nodes: the resume goes to the other one):

- a 20 MB file sent in 5 MB chunks, stopped part-way and resumed by a new
  uploader from its URL, arrives byte for byte as the owner's file;
- through a request with a password, once its page was unlocked: the
  uploader sends the unlock cookie its browser would, as a header.
"""

import hashlib
import os
import random
import re

import pytest
import requests
from tusclient import client as tus
from tusclient.exceptions import TusCommunicationError

from collect.models import ReceivedFile, UploadRequest
from collect.unlock import UNLOCK_COOKIE
from sharing.models import StoredFile
from tests.helpers import run_manage, web_nodes
from tests.test_collect_api import make_request
from uploads.models import Upload, partial_path

pytestmark = [pytest.mark.fault, pytest.mark.django_db(transaction=True)]

MiB = 1024 * 1024
CHUNK = 5 * MiB
SIZE = 20 * MiB + 4321  # four whole chunks and a short one


@pytest.fixture(scope="module")
def data() -> bytes:
    return random.Random(20260101).randbytes(SIZE)


@pytest.fixture
def source(tmp_path, data):
    path = tmp_path / "source.bin"
    path.write_bytes(data)
    return path


@pytest.fixture(scope="module")
def static_root(tmp_path_factory) -> str:
    """The request's page links static files through the manifest, as deployed."""
    root = tmp_path_factory.mktemp("static")
    done = run_manage(
        "collectstatic", "--noinput", "--verbosity", "0", STATIC_ROOT=str(root), SECRET_KEY=os.environ["SECRET_KEY"]
    )
    assert done.returncode == 0, done.stderr
    return str(root)


@pytest.fixture
def servers(tmp_path, settings, static_root):
    with web_nodes(tmp_path, str(settings.MEDIA_ROOT), STATIC_ROOT=static_root) as ports:
        yield ports


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def new_request(owner_client, **fields) -> UploadRequest:
    """Made by its owner through the API, as the owner's apps do."""
    return UploadRequest.objects.get(pk=make_request(owner_client, **fields)["id"])


def tus_url(port: int, upload_request: UploadRequest) -> str:
    return f"http://127.0.0.1:{port}/r/{upload_request.token}/uploads/"


def assert_arrived(owner, upload_request: UploadRequest, data: bytes) -> None:
    stored = StoredFile.objects.get(owner=owner)
    assert (stored.name, stored.size, stored.sha256) == ("big.bin", SIZE, sha256(data))
    assert stored.content.read() == data
    received = ReceivedFile.objects.get(request=upload_request)
    assert (received.arrived, received.file_id) == (True, stored.pk)
    upload_request.refresh_from_db()
    assert (upload_request.files_taken, upload_request.bytes_taken) == (1, SIZE)
    assert not partial_path(Upload.objects.get().pk).exists()


def test_tuspy_sends_a_file_through_a_request_link_interrupted_and_resumed(alice, alice_client, servers, source, data):
    upload_request = new_request(alice_client)
    first = tus.TusClient(tus_url(servers[0], upload_request)).uploader(
        file_path=str(source), chunk_size=CHUNK, metadata={"filename": "big.bin"}, upload_checksum=True
    )
    first.upload(stop_at=2 * CHUNK + 1000)  # stopped mid-file, the third chunk cut short
    assert first.url.startswith(tus_url(servers[0], upload_request))
    assert Upload.objects.get().offset == 2 * CHUNK + 1000
    assert not StoredFile.objects.exists()

    # A new uploader knows only the URL; it asks the (other) server for the offset.
    url = first.url.replace(str(servers[0]), str(servers[-1]))
    again = tus.TusClient(tus_url(servers[-1], upload_request)).uploader(
        file_path=str(source), url=url, chunk_size=CHUNK, upload_checksum=True
    )
    assert again.offset == 2 * CHUNK + 1000
    again.upload()
    assert "upload-file" not in again.request.response_headers  # the owner's API is not the uploader's
    assert_arrived(alice, upload_request, data)


def unlock(port: int, upload_request: UploadRequest, password: str) -> str:
    """Give the password on the request's page, as its form does; return the unlock cookie."""
    browser = requests.Session()
    page = f"http://127.0.0.1:{port}/r/{upload_request.token}/"
    form = browser.get(page, timeout=30)
    assert form.status_code == 200
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
    answer = browser.post(
        page, data={"password": password, "csrfmiddlewaretoken": csrf}, allow_redirects=False, timeout=30
    )
    assert answer.status_code == 303, answer.text
    return answer.cookies[UNLOCK_COOKIE]


def test_tuspy_sends_a_file_through_a_password_request_after_unlocking_it(
    alice, alice_client, servers, source, data, settings
):
    # Hashed as the servers check it (the suite's fast hasher is not in their list).
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]
    upload_request = new_request(alice_client, password="open sesame")
    refused = tus.TusClient(tus_url(servers[0], upload_request)).uploader(file_path=str(source), chunk_size=CHUNK)
    with pytest.raises(TusCommunicationError) as locked:
        refused.upload()
    assert locked.value.status_code == 403
    assert not Upload.objects.exists()

    cookie = unlock(servers[0], upload_request, "open sesame")
    headers = {"Cookie": f"{UNLOCK_COOKIE}={cookie}"}
    first = tus.TusClient(tus_url(servers[0], upload_request), headers=headers).uploader(
        file_path=str(source), chunk_size=CHUNK, metadata={"filename": "big.bin"}
    )
    first.upload(stop_at=CHUNK)
    url = first.url.replace(str(servers[0]), str(servers[-1]))
    again = tus.TusClient(tus_url(servers[-1], upload_request), headers=headers).uploader(
        file_path=str(source), url=url, chunk_size=CHUNK
    )
    assert again.offset == CHUNK
    again.upload()
    assert_arrived(alice, upload_request, data)
