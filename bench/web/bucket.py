"""The object store of the bucket pass: moto's standalone S3 server, started
and stopped by the benchmark, one bucket in it, and the STORAGE_URL that
points the app there.

moto keeps every object in its own Python process's memory on this machine:
its figures are a floor of our overhead plus moto's, not a bucket's
throughput over a network (docs/benchmarks.md). The tests have their own
helpers for the same server (tests/buckets.py); nothing in bench/ imports
the test suite, so the few lines are here again.
"""

import contextlib
import importlib.metadata
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import boto3
from botocore.config import Config

from bench.web.server import die_with_parent, free_port, stop

REGION = "us-east-1"
PREFIX = "media"
# moto accepts any credentials; boto3 in the app and the seeder wants some.
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "bench-web", "AWS_SECRET_ACCESS_KEY": "bench-web-secret"}
START_TIMEOUT_S = 30.0


def find_moto() -> Path | None:
    """moto's server beside this Python (requirements-dev.txt), or None."""
    path = Path(sys.executable).with_name("moto_server")
    return path if path.exists() else None


def moto_version() -> str:
    return importlib.metadata.version("moto")


@dataclass(frozen=True)
class Bucket:
    endpoint: str
    name: str

    @property
    def storage_url(self) -> str:
        return f"s3://{self.name}/{PREFIX}?endpoint={self.endpoint}&region={REGION}&addressing=path"

    def env(self) -> dict[str, str]:
        """What the app's processes need to keep their bytes in this bucket."""
        return {"STORAGE_URL": self.storage_url, **CREDENTIALS}


@contextlib.contextmanager
def moto_bucket(moto: Path, log: Path) -> Iterator[Bucket]:
    """A moto server on a free port with one empty bucket, until the block
    ends; the server (and every object in it) is gone afterwards."""
    port = free_port()
    with open(log, "ab") as sink:
        process = subprocess.Popen(
            [str(moto), "-H", "127.0.0.1", "-p", str(port)],
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
    try:
        endpoint = f"http://127.0.0.1:{port}"
        _wait_listening(process, port)
        bucket = Bucket(endpoint, f"bench-web-{uuid.uuid4().hex[:12]}")
        _client(endpoint).create_bucket(Bucket=bucket.name)
        yield bucket
    finally:
        stop(process)


def _wait_listening(process: subprocess.Popen, port: int) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if process.poll() is not None:
                raise RuntimeError(f"moto_server exited ({process.returncode})") from None
            if time.monotonic() > deadline:
                raise RuntimeError(f"moto_server not listening on {port} after {START_TIMEOUT_S:g} s") from None
            time.sleep(0.05)


def _client(endpoint: str):
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        config=Config(signature_version="s3v4"),
    )
