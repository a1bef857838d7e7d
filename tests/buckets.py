"""A real S3 API for tests: moto's standalone server (moto[server]) over HTTP,
reached through boto3 exactly as a deployment reaches AWS or MinIO.

moto keeps the objects in its own process's memory; each test gets a bucket
of its own. It does not enforce a presigned URL's expiry (an expired URL
still answers 200), so tests check the signed fields instead.
"""

import os
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

from microcloud import moto_bucket
from storage.url import storage_from_url

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "microcloud-test", "AWS_SECRET_ACCESS_KEY": "microcloud-test-secret"}
REGION = moto_bucket.REGION


def moto_server():
    """Start moto's S3 server on a free port; yield its endpoint URL."""
    return moto_bucket.moto_server()


def client(endpoint: str):
    return moto_bucket.client(endpoint, CREDENTIALS)


def new_bucket(endpoint: str) -> str:
    name = f"microcloud-{uuid.uuid4().hex[:16]}"
    client(endpoint).create_bucket(Bucket=name)
    return name


storage_url = moto_bucket.storage_url
free_port = moto_bucket.free_port


def bucket_storages(settings_storages: dict, url: str) -> dict:
    """STORAGES with the default storage in the bucket STORAGE_URL `url` names."""
    return {**settings_storages, "default": storage_from_url(url)}


def keys(endpoint: str, bucket: str) -> list[str]:
    """Every object key in `bucket`."""
    listing = client(endpoint).list_objects_v2(Bucket=bucket)
    return sorted(item["Key"] for item in listing.get("Contents", []))


def set_credentials(environ=os.environ) -> None:
    for name, value in CREDENTIALS.items():
        environ.setdefault(name, value)


@dataclass
class Fetched:
    status: int
    headers: dict
    body: bytes


def fetch(url: str) -> Fetched:
    """GET `url` as a browser following a redirect would (no credentials)."""
    with urllib.request.urlopen(url, timeout=30) as answer:
        return Fetched(answer.status, dict(answer.headers), answer.read())


def endpoint_of(url: str) -> str:
    """The endpoint a storage_url() names."""
    return parse_qs(urlsplit(url).query)["endpoint"][0]


class BucketCalls:
    """The requests a storage's client made to the bucket while counted:
    each operation's name, and the bytes of the bodies sent and received."""

    def __init__(self):
        self.operations: list[str] = []
        self.sent = 0
        self.received = 0

    def sending(self, request, **kwargs) -> None:
        headers = request.headers
        length = headers.get("X-Amz-Decoded-Content-Length") or headers.get("Content-Length") or 0
        self.sent += int(length)

    def answered(self, http_response, model, **kwargs) -> None:
        self.operations.append(model.name)
        if model.name == "GetObject":  # the object's bytes, whether read or not
            self.received += int(http_response.headers.get("Content-Length") or 0)

    def __len__(self) -> int:
        return len(self.operations)

    def count(self, operation: str) -> int:
        return self.operations.count(operation)


@contextmanager
def counted(storage) -> Iterator[BucketCalls]:
    """Count the bucket requests `storage` (a BucketStorage) makes from this
    thread (its client is this thread's) until the block ends."""
    calls = BucketCalls()
    events = storage.connection.meta.client.meta.events
    events.register("before-send.s3", calls.sending, unique_id=f"count-send-{id(calls)}")
    events.register("after-call.s3", calls.answered, unique_id=f"count-call-{id(calls)}")
    try:
        yield calls
    finally:
        events.unregister("before-send.s3", unique_id=f"count-send-{id(calls)}")
        events.unregister("after-call.s3", unique_id=f"count-call-{id(calls)}")
