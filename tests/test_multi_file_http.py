"""Shares of several files over real HTTP: each file and the zip of all of
them, served by gunicorn (separate worker processes; on PostgreSQL two
servers, as two nodes) on the test's database.

- curl killed (and wget stopped with Ctrl-C) in the middle of a limited
  link's zip and resumed with its own flag (-C -, -c) ends with the very zip
  an unlimited link of the same files sends (its bytes depend only on the
  files), which Python's zipfile opens and checks; the link counts one
  download and refuses another whole zip.
- 50 clients released at once, half asking for the zip, half for single
  files, share one byte budget: together they get no more files' bytes
  than it holds (a zip's headers are free), every body sent is right, the
  rest are 410 and asked for more than the budget holds at the end.
- A zip over 4 GiB (ZIP64: a member's size and the next member's offset do
  not fit 32 bits) is read by zipfile through Range requests alone, as a
  remote archive browser does, without fetching its 4 GiB: the big file is
  a sparse file on disk, so the test needs no 4 GiB of disk either.
- At a short-lived link's deadline every file, the zip and the link itself
  refuse alike (410), as soon as the clock passes it.

The in-process behaviour (names, ETags, the budget's arithmetic) is in
tests/test_multi_file_shares.py.
"""

import hashlib
import http.client
import io
import os
import random
import signal
import struct
import threading
import uuid
import zipfile
import zlib
from collections import Counter
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from sharing.models import Share, StoredFile
from tests.helpers import report, wait_until, web_nodes
from tests.test_resume_tools import fetch, interrupt, run, settled, story, tool, written

pytestmark = [pytest.mark.fault, pytest.mark.django_db(transaction=True)]

MiB = 1024 * 1024
GiB = 1024 * MiB
ZURICH = "Grüezi aus Zürich: Limmat, Üetliberg, Sechseläuten.\n" * 3


@pytest.fixture
def servers(tmp_path, settings):
    """The web servers' ports (on PostgreSQL, two nodes)."""
    with web_nodes(tmp_path, str(settings.MEDIA_ROOT)) as ports:
        yield ports


def three_files(alice, make_file, sizes: tuple[int, int], seed: int):
    """Two files of random bytes of `sizes` and a small text with a non-ASCII
    name; return (files, {name: bytes})."""
    rng = random.Random(seed)
    contents = {
        "big.bin": rng.randbytes(sizes[0]),
        "middle.bin": rng.randbytes(sizes[1]),
        "Zürich.txt": ZURICH.encode(),
    }
    types = {"big.bin": "application/octet-stream", "middle.bin": "application/octet-stream"}
    files = [
        make_file(alice, name, data, types.get(name, "text/plain; charset=utf-8")) for name, data in contents.items()
    ]
    return files, contents


def share_of(files, lifetime=timedelta(hours=1), **options) -> Share:
    return Share.create_for(files=files, expires_at=timezone.now() + lifetime, **options)


def zip_path(share: Share) -> str:
    return reverse("public-archive", args=[share.token])


def file_path(share: Share, position: int) -> str:
    return reverse("public-file", args=[share.token, position])


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def expected_zip(port: int, files) -> bytes:
    """The zip of `files`, from a link of them without a limit."""
    status, _, body = fetch(port, zip_path(share_of(files)))
    assert status == 200, body[:200]
    return body


def check_zip(data: bytes, contents: dict[str, bytes]) -> None:
    """`data` is a zip zipfile accepts, holding exactly `contents`."""
    archive = zipfile.ZipFile(io.BytesIO(data))
    assert archive.testzip() is None  # every member's CRC-32 matches its bytes
    assert archive.namelist() == list(contents)
    for name, original in contents.items():
        assert sha256(archive.read(name)) == sha256(original), name


# --- an interrupted zip, resumed ---------------------------------------------------


def interrupted(name: str, out, url: str) -> tuple[list[str], signal.Signals]:
    """The throttled first try of tool `name` and how it is stopped."""
    if name == "curl":
        return [tool("curl"), "-sS", "--limit-rate", "2M", "-o", str(out), url], signal.SIGKILL
    return [tool("wget"), "-q", "--limit-rate=2M", "-O", str(out), url], signal.SIGINT


def resumed_with(name: str, out, url: str) -> list[str]:
    """Tool `name`'s own resume of `out` (curl -C -, wget -c)."""
    if name == "curl":
        return [tool("curl"), "-sS", "-f", "-C", "-", "-o", str(out), url]
    return [tool("wget"), "-q", "-c", "-O", str(out), url]


@pytest.mark.parametrize("name", ["curl", "wget"])
def test_a_tool_stopped_in_the_zip_then_resumed_gets_the_whole_zip(servers, alice, make_file, tmp_path, capsys, name):
    files, contents = three_files(alice, make_file, (24 * MiB, 3 * MiB + 17), seed=1)
    share = share_of(files, max_downloads=1)
    out = tmp_path / "all.zip"
    url = f"http://127.0.0.1:{servers[0]}{zip_path(share)}"
    try:
        expected = expected_zip(servers[-1], files)
        # curl 7.88 takes some 10 MB at once, then waits to bring its average
        # down to 2 MB/s: stopped then, mid-way through a 27 MiB zip's first file.
        command, stop = interrupted(name, out, url)
        interrupt(command, out, stop, at=2 * MiB)
        assert written(out) < len(expected)
    except AssertionError as error:
        pytest.fail(f"no interrupted download to resume: {error}")
    broken_at = out.stat().st_size

    resumed = run(resumed_with(name, out, f"http://127.0.0.1:{servers[-1]}{zip_path(share)}"))
    share = settled(share)
    report(
        capsys,
        f"{name} stopped in a limit-1 zip, then its own resume",
        zip=len(expected),
        broken_at=broken_at,
        budget=share.budget,
        allowance=share.budget - share.size,
        used=share.budget - share.bytes_left,
        resumed=resumed.returncode,
        responses=story(share),
    )
    assert resumed.returncode == 0, (resumed.stderr, story(share))
    got = out.read_bytes()
    assert len(got) == len(expected)
    assert sha256(got) == sha256(expected)
    check_zip(got, contents)
    assert share.total_downloads == 1, story(share)
    assert share.downloads_left == 0  # what the allowance leaves may resend a small file, never the zip
    status, _, body = fetch(servers[0], zip_path(share))
    assert status == 410, body[:200]


# --- many clients, one budget ------------------------------------------------------


def test_concurrent_zips_and_files_receive_no_more_than_the_budget(servers, alice, make_file, capsys):
    """Whichever win, together they receive no more than the budget, and
    every refusal asked for more than the budget holds at the end (it only
    shrinks: every response is read to its end); the share has ended by its
    limit exactly when what is left holds less than its smallest file."""
    rng = random.Random(2)
    contents = {
        "a.bin": rng.randbytes(MiB + 3),
        "b.bin": rng.randbytes(640 * 1024 + 11),
        "c.bin": rng.randbytes(384 * 1024),
    }
    files = [make_file(alice, name, data, "application/octet-stream") for name, data in contents.items()]
    originals = list(contents.values())
    expected = expected_zip(servers[-1], files)
    share = share_of(files, max_downloads=1)
    # None: the zip; n: the n-th file.
    wanted = [None if n % 2 == 0 else (n // 2) % 3 + 1 for n in range(50)]
    results = [None] * len(wanted)
    barrier = threading.Barrier(len(wanted))

    def client(n: int) -> None:
        path = zip_path(share) if wanted[n] is None else file_path(share, wanted[n])
        barrier.wait(30)
        results[n] = fetch(servers[(n // 2) % len(servers)], path)  # zips and files on each node

    threads = [threading.Thread(target=client, args=(n,)) for n in range(len(wanted))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert all(result is not None for result in results), "a client never got its answer"

    received = 0  # files' bytes: a zip's headers cost nothing
    copies = 0
    statuses = Counter()
    for position, (status, _, body) in zip(wanted, results, strict=True):
        statuses[f"{'zip' if position is None else f'file {position}'} {status}"] += 1
        if status != 200:
            assert status == 410, (status, body[:200])
            continue
        if position is None:
            assert body == expected
            received += share.size
        else:
            assert body == originals[position - 1]
            received += len(body)
        copies += 1

    share = settled(share)
    report(
        capsys,
        "25 zips + 25 single files of a 2 MiB limit-1 share, at once",
        servers=len(servers),
        statuses=dict(sorted(statuses.items())),
        received=received,
        budget=share.budget,
    )
    assert 0 < received <= share.budget
    assert share.budget - share.bytes_left == received
    assert share.total_downloads == copies
    refused = {position for position, (status, _, _) in zip(wanted, results, strict=True) if status == 410}
    costs = {None: share.size, **{n: len(originals[n - 1]) for n in (1, 2, 3)}}
    assert refused
    assert all(costs[position] > share.bytes_left for position in refused)
    ended = (share.status, share.end_reason) == (Share.Status.EXPIRED, Share.EndReason.DOWNLOAD_LIMIT)
    assert ended == (share.bytes_left < min(len(data) for data in originals))


# --- ZIP64, read remotely -----------------------------------------------------------

BIG = 4 * GiB + MiB


def request(port: int, method: str, path: str, headers=None) -> tuple[int, dict[str, str], bytes]:
    client = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        client.request(method, path, headers=headers or {})
        response = client.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        client.close()


class RemoteFile:
    """A read-only, seekable file whose reads are Range requests (the way a
    remote zip browser reads an archive): all zipfile needs."""

    def __init__(self, port: int, path: str):
        self.port, self.path = port, path
        status, headers, _ = request(port, "HEAD", path)
        assert status == 200, status
        self.size = int(headers["Content-Length"])
        self.etag = headers["ETag"]
        self.position = 0
        self.requests = self.received = 0

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        self.position = {os.SEEK_SET: 0, os.SEEK_CUR: self.position, os.SEEK_END: self.size}[whence] + offset
        return self.position

    def read(self, n: int = -1) -> bytes:
        end = self.size if n is None or n < 0 else min(self.size, self.position + n)
        if end <= self.position:
            return b""
        assert end - self.position <= 4 * MiB, f"asked for {end - self.position} bytes at once"
        last = end - 1
        headers = {"Range": f"bytes={self.position}-{last}", "If-Range": self.etag}
        status, answer, body = request(self.port, "GET", self.path, headers)
        assert status == 206, (status, body[:200])
        assert answer["Content-Range"] == f"bytes {self.position}-{last}/{self.size}"
        assert len(body) == end - self.position
        self.requests += 1
        self.received += len(body)
        self.position = end
        return body


@pytest.fixture
def sparse_file(alice, settings):
    """A StoredFile of BIG zero bytes, sparse on disk (no 4 GiB written),
    removed at the end."""
    relative = f"files/sparse/{uuid.uuid4().hex}"
    path = settings.MEDIA_ROOT / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    stat = os.statvfs(path.parent)
    if stat.f_bavail * stat.f_frsize < 256 * MiB:
        pytest.skip("the disk under MEDIA_ROOT has under 256 MiB free: no room even for a sparse 4 GiB file")
    try:
        try:
            with open(path, "wb") as handle:
                handle.truncate(BIG)
        except OSError as error:
            pytest.skip(f"the disk under MEDIA_ROOT cannot hold a sparse {BIG}-byte file: {error}")
        if path.stat().st_blocks * 512 > 64 * MiB and stat.f_bavail * stat.f_frsize < 2 * BIG:
            pytest.skip("the file system under MEDIA_ROOT does not keep files sparse, and has no room for 4 GiB")
        digest, crc, zeros = hashlib.sha256(), 0, bytes(16 * MiB)
        for start in range(0, BIG, len(zeros)):
            chunk = zeros[: min(len(zeros), BIG - start)]
            digest.update(chunk)
            crc = zlib.crc32(chunk, crc)
        stored = StoredFile(owner=alice, name="zeros.bin", size=BIG, content_type="application/octet-stream")
        stored.content.name = relative
        stored.sha256, stored.crc32 = digest.hexdigest(), crc
        stored.save()
        yield stored
    finally:
        path.unlink(missing_ok=True)


def test_a_zip64_archive_is_read_remotely_through_ranges(servers, alice, make_file, sparse_file, capsys):
    """The big file between two small ones: the last one's local header lies
    past 4 GiB, so its offset needs ZIP64 too, and so do the end records."""
    contents = {"first.txt": b"before the big one\n" * 100, "last.bin": random.Random(3).randbytes(70000)}
    first = make_file(alice, "first.txt", contents["first.txt"], "text/plain")
    last = make_file(alice, "last.bin", contents["last.bin"], "application/octet-stream")
    share = share_of([first, sparse_file, last])
    remote = RemoteFile(servers[-1], zip_path(share))

    archive = zipfile.ZipFile(remote)

    infos = {info.filename: info for info in archive.infolist()}
    assert list(infos) == ["first.txt", "zeros.bin", "last.bin"]
    big = infos["zeros.bin"]
    assert big.file_size == big.compress_size == BIG  # from the ZIP64 extra field
    assert infos["last.bin"].header_offset > 4 * GiB  # its offset too
    assert remote.size > BIG
    for name, original in contents.items():  # zipfile checks each CRC-32 as it reads
        assert sha256(archive.read(name)) == sha256(original), name
    with archive.open(big) as member:  # its local header checked by zipfile
        assert member.read(MiB) == bytes(MiB)
    # The big file's last MiB, right before the next member's local header.
    remote.seek(big.header_offset)
    _, name_length, extra_length = struct.unpack("<26sHH", remote.read(30))
    data_offset = big.header_offset + 30 + name_length + extra_length
    remote.seek(data_offset + BIG - MiB)
    assert remote.read(MiB) == bytes(MiB)
    assert remote.read(4) == b"PK\x03\x04"
    report(
        capsys, "a 4 GiB zip read through ranges", zip=remote.size, requests=remote.requests, received=remote.received
    )
    assert remote.received < 8 * MiB  # nowhere near the 4 GiB


# --- the deadline -------------------------------------------------------------------


def warm_up(servers: list[int], paths: list[str]) -> None:
    """Have the servers' workers answer each of `paths` (as far as the kernel
    spreads 8 connections a server over them): a worker's first requests
    take a second or more (lazy imports), most of a short-lived link's life."""
    barrier = threading.Barrier(8 * len(servers))

    def client(port: int) -> None:
        barrier.wait(30)
        for path in paths:
            assert fetch(port, path)[0] == 200, path

    threads = [threading.Thread(target=client, args=(port,)) for port in servers for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)


def link_paths(share: Share) -> list[str]:
    return [file_path(share, 1), file_path(share, 2), zip_path(share), reverse("public-share", args=[share.token])]


def test_at_the_deadline_every_file_the_zip_and_the_link_refuse(servers, alice, make_file):
    """Polled from its creation until past its deadline, a link of 2 files
    lived (200 for whatever finished before it) and then, for every request
    started after it, each file, the zip and the link itself say it expired."""
    files = [make_file(alice, "one.txt", b"one\n" * 100), make_file(alice, "Zürich.txt", ZURICH.encode())]
    warm_up(servers, link_paths(share_of(files)))
    share = share_of(files, lifetime=timedelta(seconds=1.5))
    refused_from_the_deadline(servers, link_paths(share), share.expires_at)


def refused_from_the_deadline(servers: list[int], paths: list[str], deadline) -> float:
    """Poll each of `paths` in turn from now until past `deadline`: every
    request that finished before it got 200 (there must be some), every one
    started after it 410 "expired". Return how long after the deadline the
    first refused request started, in ms (a figure, not a bound)."""
    seen = []  # (path, started, finished, status, body)

    def poll() -> bool:
        for n, path in enumerate(paths):
            started = timezone.now()
            status, _, body = fetch(servers[n % len(servers)], path)
            seen.append((path, started, timezone.now(), status, body))
        return started > deadline + timedelta(seconds=0.3)

    assert wait_until(poll, 10, interval=0)

    before = [(path, status) for path, _, finished, status, _ in seen if finished < deadline]
    assert before, "no request finished before the deadline: nothing shows the link was live"
    assert {status for _, status in before} == {200}, before
    for path in paths:
        after = [(status, body) for p, started, _, status, body in seen if p == path and started > deadline]
        assert after, path
        for status, body in after:
            assert status == 410, (path, status, body[:200])
            assert body == b"This link has expired.\n", path
    first = min(started for _, started, _, status, _ in seen if status == 410)
    return (first - deadline).total_seconds() * 1000
