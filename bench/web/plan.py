"""How much the web benchmark measures: the full run and the smoke run."""

from dataclasses import dataclass, field

from deploy import web_servers

MB = 1024 * 1024


def default_workers() -> int:
    return web_servers.default_workers("gunicorn")


@dataclass(frozen=True)
class Plan:
    seconds: int = 10  # wrk's duration for one cell (one scenario at one concurrency); wrk takes whole seconds
    warmup_seconds: int = 1  # per scenario, at 16 connections, before the cells; 0: no warm-up
    connections: tuple[int, ...] = (1, 16, 64)
    # The files behind the small, medium and large downloads (and their
    # static twins served by WhiteNoise).
    small_bytes: int = 100
    medium_bytes: int = MB
    large_bytes: int = 100 * MB
    # The zip scenario: one share of zip_files files of zip_file_bytes each,
    # sent as /s/<token>/all.zip (compared with the large download's MB/s).
    zip_files: int = 10
    zip_file_bytes: int = 10_000_000
    upload_bytes: int = 1_000_000_000  # 1 GB, under the limit below, so it is accepted
    upload_limit_bytes: int = 1024**3  # the server's MAX_UPLOAD_BYTES (the app's default)
    # The same upload over tus (/api/uploads/): bytes per PATCH, below the
    # server's TUS_MAX_CHUNK_BYTES (64 MiB) and the web app's own chunk.
    tus_chunk_bytes: int = 8 * MB
    list_shares: int = 50  # the reader's shares: one full page of GET /api/shares/
    workers: int = field(default_factory=default_workers)
    threads: int = 4


FULL = Plan()
SMOKE = Plan(
    seconds=1,
    warmup_seconds=0,
    connections=(1, 16),
    medium_bytes=64 * 1024,
    large_bytes=4 * MB,
    zip_file_bytes=400 * 1024,  # 10 x 400 KiB, about the smoke's large file
    upload_bytes=12 * MB,
    # Three PATCHes, the last one short; no smaller: a bucket takes no chunk
    # under 5 MiB but the last (storage/bucket_partials.py).
    tus_chunk_bytes=5 * MB,
    list_shares=10,
    workers=2,
    threads=2,
)
