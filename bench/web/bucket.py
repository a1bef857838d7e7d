"""The object store of the bucket pass: moto's standalone S3 server, started
and stopped by the benchmark, one bucket in it, and the STORAGE_URL that
points the app there.

moto keeps every object in its own Python process's memory on this machine:
its figures are a floor of our overhead plus moto's, not a bucket's
throughput over a network (docs/benchmarks.md, "Web benchmark"). Starting it is
microcloud.moto_bucket's, shared with the tests.
"""

import contextlib
import importlib.metadata
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bench.web.server import die_with_parent
from microcloud.moto_bucket import REGION, client, moto_server, moto_server_path, storage_url

__all__ = ["PREFIX", "REGION", "Bucket", "find_moto", "moto_bucket", "moto_version"]

PREFIX = "media"
# moto accepts any credentials; boto3 in the app and the seeder wants some.
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "bench-web", "AWS_SECRET_ACCESS_KEY": "bench-web-secret"}


def find_moto() -> Path | None:
    """moto's server beside this Python (requirements-dev.txt), or None."""
    path = moto_server_path()
    return path if path.exists() else None


def moto_version() -> str:
    return importlib.metadata.version("moto")


@dataclass(frozen=True)
class Bucket:
    endpoint: str
    name: str

    @property
    def storage_url(self) -> str:
        return storage_url(self.endpoint, self.name, PREFIX)

    def env(self) -> dict[str, str]:
        """What the app's processes need to keep their bytes in this bucket."""
        return {"STORAGE_URL": self.storage_url, **CREDENTIALS}


@contextlib.contextmanager
def moto_bucket(log: Path) -> Iterator[Bucket]:
    """A moto server on a free port with one empty bucket, until the block
    ends; the server (and every object in it) is gone afterwards."""
    with open(log, "ab") as sink, moto_server(output=sink, preexec_fn=die_with_parent) as endpoint:
        bucket = Bucket(endpoint, f"bench-web-{uuid.uuid4().hex[:12]}")
        client(endpoint, CREDENTIALS).create_bucket(Bucket=bucket.name)
        yield bucket
