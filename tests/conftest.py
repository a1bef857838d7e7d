"""Shared fixtures: alice owns things, bob is a stranger."""

import os
import shutil
import tempfile
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from notices.worker import default_worker
from sharing.models import Share, StoredFile
from tests import buckets
from tests.helpers import hold


@pytest.fixture(autouse=True)
def email_notices_done_before_the_database_goes():
    """A test that triggers an email notice leaves the job to this process's
    mail thread, which reads and writes the database on its own connection:
    it must be done before the test's database is flushed (a TRUNCATE racing
    it deadlocks on PostgreSQL). Autouse fixtures of plugins are set up
    first, so this one is torn down before pytest-django's."""
    yield
    assert default_worker().flush(30), "an email notice job still running 30 s after its test"


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user("alice", "alice@example.com", "alice-password-1")


@pytest.fixture
def bob(db):
    return get_user_model().objects.create_user("bob", "bob@example.com", "bob-password-1")


@pytest.fixture
def admin_user(db):
    return get_user_model().objects.create_superuser("root", "root@example.com", "root-password-1")


@pytest.fixture
def alice_web(alice) -> Client:
    """Alice signed in to the web pages."""
    client = Client()
    client.force_login(alice)
    return client


@pytest.fixture
def bob_web(bob) -> Client:
    client = Client()
    client.force_login(bob)
    return client


@pytest.fixture
def anon_client():
    return APIClient()


@pytest.fixture
def alice_client(alice):
    client = APIClient()
    client.force_authenticate(alice)
    return client


@pytest.fixture
def bob_client(bob):
    client = APIClient()
    client.force_authenticate(bob)
    return client


@pytest.fixture
def make_file():
    """Store a real file for `owner` through the model's upload path."""

    def make(owner, name="report.txt", data=b"hello, world\n", content_type="text/plain"):
        upload = SimpleUploadedFile(name, data, content_type=content_type)
        return StoredFile.create_from_upload(owner=owner, upload=upload)

    return make


@pytest.fixture
def shared_file(alice, make_file):
    return make_file(alice)


@pytest.fixture
def make_shares(shared_file):
    """Insert `count` active shares of alice's file due `seconds` from now, in one go."""

    def make(count: int, seconds: float) -> list[Share]:
        now = timezone.now()
        deadline = now + timedelta(seconds=seconds)
        made = Share.objects.bulk_create(
            Share(
                owner=shared_file.owner,
                size=shared_file.size,
                least=shared_file.size,
                created_at=now,
                updated_at=now,
                expires_at=deadline,
            )
            for _ in range(count)
        )
        return hold(made, shared_file)

    return make


@pytest.fixture(scope="session")
def s3_endpoint():
    """moto's S3 server, one per test process (tests.buckets)."""
    buckets.set_credentials()
    with buckets.moto_server() as endpoint:
        yield endpoint


@pytest.fixture
def bucket_storage(settings, s3_endpoint):
    """File bytes in a new bucket of moto's server: (endpoint, bucket name)."""
    bucket = buckets.new_bucket(s3_endpoint)
    settings.STORAGE_URL = buckets.storage_url(s3_endpoint, bucket)
    settings.STORAGES = buckets.bucket_storages(settings.STORAGES, settings.STORAGE_URL)
    return s3_endpoint, bucket


@pytest.fixture(params=["disk", "bucket"])
def either_storage(request):
    """Run the test once with file bytes on the local disk (MEDIA_ROOT) and
    once in an S3 bucket (moto's server): ("disk", None) or ("bucket",
    (endpoint, bucket name))."""
    if request.param == "disk":
        return "disk", None
    return "bucket", request.getfixturevalue("bucket_storage")


@pytest.fixture
def clamd(settings, tmp_path_factory):
    """A real clamd (Debian's) on a unix socket with the EICAR signature
    only (tests.clamd), and scanning on (CLAMD_URL); skipped without clamd."""
    from tests.clamd import ClamdProcess, available

    if not available():
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("clamd is required under CI (apt-get install -y clamav-daemon)")
        pytest.skip("needs /usr/sbin/clamd (Debian's clamav-daemon)")
    # A short folder: a unix socket's path has at most 107 bytes.
    process = ClamdProcess(Path(tempfile.mkdtemp(prefix="clamd-", dir="/tmp")))
    process.start()
    settings.CLAMD_URL = process.url
    yield process
    process.stop()
    shutil.rmtree(process.folder, ignore_errors=True)
