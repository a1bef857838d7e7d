"""A real S3 API for tests: moto's standalone server (moto[server]) over HTTP,
reached through boto3 exactly as a deployment reaches AWS or MinIO.

moto keeps the objects in its own process's memory; each test gets a bucket
of its own. It does not enforce a presigned URL's expiry (an expired URL
still answers 200), so tests check the signed fields instead.
"""

import os
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import boto3
from botocore.config import Config

from microcloud.storage_url import storage_from_url

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "microcloud-test", "AWS_SECRET_ACCESS_KEY": "microcloud-test-secret"}
REGION = "us-east-1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def moto_server():
    """Start moto's S3 server on a free port; yield its endpoint URL."""
    port = free_port()
    moto = Path(sys.executable).with_name("moto_server")
    process = subprocess.Popen(
        [str(moto), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto_server did not start on port {port}") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(10)


def client(endpoint: str):
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        config=Config(signature_version="s3v4"),
    )


def new_bucket(endpoint: str) -> str:
    name = f"microcloud-{uuid.uuid4().hex[:16]}"
    client(endpoint).create_bucket(Bucket=name)
    return name


def storage_url(endpoint: str, bucket: str, prefix: str = "media") -> str:
    return f"s3://{bucket}/{prefix}?endpoint={endpoint}&region={REGION}&addressing=path"


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
