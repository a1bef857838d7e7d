"""moto's standalone S3 server (moto[server], a development requirement), for
the tests (tests/buckets.py) and the web benchmark's bucket pass
(bench/web/bucket.py): the S3 API over HTTP on a free loopback port,
reached through boto3 exactly as a deployment reaches AWS or MinIO. The
service never uses it.

moto keeps every object in its own process's memory, accepts any
credentials, and does not enforce a presigned URL's expiry.
"""

import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import boto3
from botocore.config import Config

REGION = "us-east-1"
START_TIMEOUT_S = 30.0


def moto_server_path() -> Path:
    """moto's server script, beside this Python."""
    return Path(sys.executable).with_name("moto_server")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def moto_server(*, output=subprocess.DEVNULL, preexec_fn: Callable[[], None] | None = None) -> Iterator[str]:
    """moto's S3 server on a free port until the block ends; yields its
    endpoint URL. `output`: where its log goes."""
    port = free_port()
    process = subprocess.Popen(
        [str(moto_server_path()), "-H", "127.0.0.1", "-p", str(port)],
        stdout=output,
        stderr=subprocess.STDOUT,
        preexec_fn=preexec_fn,
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None:
                    raise RuntimeError(f"moto_server exited ({process.returncode})") from None
                if time.monotonic() > deadline:
                    raise RuntimeError(f"moto_server not listening on {port} after {START_TIMEOUT_S:g} s") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def client(endpoint: str, credentials: dict[str, str]):
    """A boto3 S3 client of the server at `endpoint`."""
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id=credentials["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=credentials["AWS_SECRET_ACCESS_KEY"],
        config=Config(signature_version="s3v4"),
    )


def storage_url(endpoint: str, bucket: str, prefix: str = "media") -> str:
    """The STORAGE_URL of `bucket` on the server at `endpoint`."""
    return f"s3://{bucket}/{prefix}?endpoint={endpoint}&region={REGION}&addressing=path"
