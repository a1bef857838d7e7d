"""File bytes in an S3 bucket (moto's server, through boto3): ranged reads,
the STORAGE_URL setting, and presigned redirects bound by the deadline."""

import hashlib
import time
from datetime import timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage, storages
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from sharing.models import Share
from storage.buckets import BucketStorage, signed_end, signed_lifetime
from storage.url import BUCKET_BACKEND, DISK_BACKEND, storage_from_url
from tests import buckets

pytestmark = pytest.mark.django_db(transaction=True)

DATA = bytes(range(256)) * 4096  # 1 MiB


@pytest.fixture
def bucket(bucket_storage):
    return bucket_storage


def share_of(stored, **options) -> Share:
    return Share.create_for(file=stored, expires_at=timezone.now() + timedelta(hours=1), **options)


def test_storage_url_names_a_bucket_a_prefix_and_an_endpoint():
    assert storage_from_url("") == {"BACKEND": DISK_BACKEND}
    assert storage_from_url(
        "s3://files/microcloud/media?endpoint=http://minio:9000&region=eu-west-1&addressing=path"
    ) == {
        "BACKEND": BUCKET_BACKEND,
        "OPTIONS": {
            "bucket_name": "files",
            "location": "microcloud/media",
            "endpoint_url": "http://minio:9000",
            "region_name": "eu-west-1",
            "addressing_style": "path",
        },
    }


@pytest.mark.parametrize(
    ("url", "named"),
    [
        ("file:///srv/media", "must be empty or s3://"),
        ("s3://", "must be empty or s3://"),
        ("s3://key:secret@files", "must not carry credentials"),
        ("s3://files?endpoint=minio:9000", "endpoint must be an http(s) URL"),
        ("s3://files?addressing=sideways", "addressing must be path or virtual"),
        ("s3://files?bucket=other", "unknown options ['bucket']"),
    ],
)
def test_a_bad_storage_url_is_named_at_start_up(url, named):
    with pytest.raises(ImproperlyConfigured, match=named.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        storage_from_url(url)


def test_a_saved_file_is_an_object_under_the_prefix(bucket):
    endpoint, name = bucket
    assert isinstance(storages["default"], BucketStorage)
    saved = default_storage.save("files/2026/11/abc", ContentFile(DATA))
    assert buckets.keys(endpoint, name) == [f"media/{saved}"]


def test_an_object_is_read_from_any_position(bucket):
    saved = default_storage.save("files/x", ContentFile(DATA))
    with default_storage.open(saved, "rb") as handle:
        assert handle.size == len(DATA)
        assert handle.read(10) == DATA[:10]
        handle.seek(700_000)
        assert handle.read(5) == DATA[700_000:700_005]
        handle.seek(-3, 2)
        assert handle.read() == DATA[-3:]
        handle.seek(len(DATA))
        assert handle.read(10) == b""
        handle.seek(0)
        assert hashlib.sha256(b"".join(handle.chunks(64 * 1024))).digest() == hashlib.sha256(DATA).digest()


def test_an_opened_object_is_read_whole_though_deleted_meanwhile(bucket):
    """The GET starts on opening: a link that ends (and an ephemeral file's
    object deleted) while a download runs still finishes that download."""
    saved = default_storage.save("files/y", ContentFile(DATA))
    with default_storage.open(saved, "rb") as handle:
        first = handle.read(1000)
        default_storage.delete(saved)
        rest = handle.read()
    assert first + rest == DATA
    assert not default_storage.exists(saved)


def test_a_missing_object_is_file_not_found(bucket):
    with pytest.raises(FileNotFoundError):
        default_storage.open("files/never-saved", "rb")


# --- presigned redirects ---------------------------------------------------------------


@pytest.fixture
def presigned(bucket, settings):
    settings.DOWNLOAD_OFFLOAD = "presigned"
    settings.DOWNLOAD_PRESIGNED_SECONDS = 60
    return bucket


def url(share: Share) -> str:
    return reverse("public-share", args=[share.token])


def test_a_link_without_a_limit_redirects_to_a_url_that_lapses_within_the_setting(presigned, alice, make_file):
    share = share_of(make_file(alice, name="r\u00e9sum\u00e9.pdf", data=DATA, content_type="application/pdf"))
    response = Client().get(url(share))
    assert response.status_code == 302
    assert response["Cache-Control"] == "no-store"
    signed_at, lifetime = signed_lifetime(response["Location"])
    assert lifetime == 60
    assert abs((signed_at - timezone.now()).total_seconds()) < 5
    share.refresh_from_db()
    assert share.total_downloads == 1
    # What the bucket sends for it: the file, as an attachment with its name.
    fetched = buckets.fetch(response["Location"])
    assert fetched.status == 200
    assert fetched.body == DATA
    assert "attachment" in fetched.headers["Content-Disposition"]
    assert "r%C3%A9sum%C3%A9.pdf" in fetched.headers["Content-Disposition"]


def test_a_redirect_made_a_second_before_the_deadline_ends_by_it(presigned, alice, make_file):
    stored = make_file(alice, data=DATA)
    share = share_of(stored)
    while timezone.now().microsecond > 500_000:  # not at the end of a second: signed in the one read here
        time.sleep(0.01)
    deadline = timezone.now() + timedelta(seconds=1)
    Share.objects.filter(pk=share.pk).update(expires_at=deadline)
    response = Client().get(url(share))
    assert response.status_code == 302
    assert signed_end(response["Location"]) <= deadline
    assert signed_lifetime(response["Location"])[1] >= 1


def test_a_deadline_within_the_signing_second_is_streamed(presigned, alice, make_file):
    """A URL's lifetime is whole seconds from the second it is signed in: a
    deadline before the end of that second leaves none, so Django streams."""
    share = share_of(make_file(alice, data=DATA))
    while timezone.now().microsecond > 400_000:  # early in a second, so the deadline is still ahead
        time.sleep(0.01)
    second = timezone.now().replace(microsecond=0)
    Share.objects.filter(pk=share.pk).update(expires_at=second + timedelta(milliseconds=900))
    response = Client().get(url(share))
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == DATA


@pytest.mark.parametrize(
    "options", [{"max_downloads": 3}, {"password": "correct horse 42"}], ids=["limited", "password"]
)
def test_a_limited_or_password_link_is_never_redirected(presigned, alice, make_file, options):
    share = share_of(make_file(alice, data=DATA), **options)
    headers = {"HTTP_X_SHARE_PASSWORD": options["password"]} if "password" in options else {}
    response = Client().get(url(share), **headers)
    assert response.status_code == 200
    assert "Location" not in response
    assert b"".join(response.streaming_content) == DATA


def test_an_expired_link_is_refused_not_redirected(presigned, alice, make_file):
    share = share_of(make_file(alice, data=DATA))
    time.sleep(0.01)  # a deadline after its creation (a constraint), now past
    Share.objects.filter(pk=share.pk).update(expires_at=timezone.now() - timedelta(milliseconds=1))
    assert Client().get(url(share)).status_code == 410
