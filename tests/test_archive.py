"""links.archive: a stored ZIP whose bytes are known in advance, served by range.

No database: the archive module is plain Python. zipfile (and unzip, when
installed) judge the archives; LayoutReader lets zipfile read one through
ranges only, as a client resuming a download would.
"""

import hashlib
import io
import itertools
import os
import random
import shutil
import struct
import subprocess
import time
import zipfile
import zlib
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from links.archive import (
    ArchiveEntry,
    ArchiveLayout,
    FileSizeMismatch,
    safe_name,
    unique_names,
)

WHEN = datetime(2026, 3, 14, 15, 9, 26, tzinfo=UTC)
RESUME = "Résumé 2026 – final.pdf"  # noqa: RUF001 - the en dash is the point: a non-ASCII name
GIB = 2**30


class Recorder:
    """Counts every open, read size and byte read of the files it hands out."""

    def __init__(self):
        self.opened: list[str] = []
        self.read_sizes: list[int] = []
        self.bytes_read: dict[str, int] = {}
        self.closed = 0

    def entry(self, name: str, data: bytes, *, when: datetime = WHEN, size: int | None = None, crc: int | None = None):
        def open_file():
            self.opened.append(name)
            return RecordingFile(self, name, data)

        size = len(data) if size is None else size
        crc = zlib.crc32(data) if crc is None else crc
        return ArchiveEntry(name=name, size=size, crc32=crc, modified=when, open=open_file)


class RecordingFile(io.BytesIO):
    def __init__(self, recorder: Recorder, name: str, data: bytes):
        super().__init__(data)
        self.recorder, self.name = recorder, name

    def read(self, size=-1):
        chunk = super().read(size)
        self.recorder.read_sizes.append(size)
        self.recorder.bytes_read[self.name] = self.recorder.bytes_read.get(self.name, 0) + len(chunk)
        return chunk

    def close(self):
        self.recorder.closed += 1
        super().close()


class LayoutReader(io.RawIOBase):
    """A read-only, seekable file over an archive layout: every read is a range."""

    def __init__(self, layout: ArchiveLayout):
        self.layout, self.position = layout, 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self.position

    def seek(self, offset, whence=io.SEEK_SET):
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.layout.length}[whence]
        self.position = base + offset
        return self.position

    def readinto(self, buffer):
        end = min(self.position + len(buffer), self.layout.length)
        if end <= self.position:
            return 0
        data = b"".join(self.layout.iter_bytes(self.position, end))
        buffer[: len(data)] = data
        self.position = end
        return len(data)


def open_zip(layout: ArchiveLayout) -> zipfile.ZipFile:
    return zipfile.ZipFile(io.BufferedReader(LayoutReader(layout), buffer_size=64 * 1024))


def whole(layout: ArchiveLayout, **kwargs) -> bytes:
    return b"".join(layout.iter_bytes(**kwargs))


@pytest.fixture
def three():
    """An empty file, a non-ASCII name, and a few hundred KB of random bytes."""
    rng = random.Random(20260314)
    contents = {
        "empty.txt": b"",
        RESUME: b"%PDF-1.7 pretend\n" * 50,
        "photos/random.bin": rng.randbytes(300_000),
    }
    recorder = Recorder()
    layout = ArchiveLayout([recorder.entry(name, data) for name, data in contents.items()])
    return layout, contents, recorder


# -- the archive as zip tools see it ------------------------------------------


def test_three_files_open_and_check_in_zipfile(three):
    layout, contents, _ = three
    full = whole(layout)
    assert layout.length == len(full)
    with zipfile.ZipFile(io.BytesIO(full)) as archive:
        assert archive.testzip() is None
        assert archive.namelist() == list(contents)
        for info in archive.infolist():
            assert info.compress_type == zipfile.ZIP_STORED
            assert info.flag_bits & 0x800, "names are flagged UTF-8"
            assert not info.flag_bits & 0x08, "sizes are in the local headers, no data descriptor"
            got = archive.read(info)
            assert hashlib.sha256(got).hexdigest() == hashlib.sha256(contents[info.filename]).hexdigest()
    assert RESUME.encode() in full, "the name is stored as UTF-8 bytes"


def test_zipfile_reads_through_ranges_only(three):
    layout, contents, _ = three
    with open_zip(layout) as archive:
        assert archive.testzip() is None
        assert {name: archive.read(name) for name in archive.namelist()} == contents


def test_times_are_utc_and_clamped_to_dos_range():
    recorder = Recorder()
    paris = timezone(timedelta(hours=2))
    layout = ArchiveLayout(
        [
            recorder.entry("paris.txt", b"a", when=datetime(2026, 6, 1, 14, 30, 7, tzinfo=paris)),
            recorder.entry("old.txt", b"b", when=datetime(1970, 1, 1, tzinfo=UTC)),
            recorder.entry("future.txt", b"c", when=datetime(2200, 1, 1, tzinfo=UTC)),
        ]
    )
    with zipfile.ZipFile(io.BytesIO(whole(layout))) as archive:
        times = [info.date_time for info in archive.infolist()]
    assert times == [(2026, 6, 1, 12, 30, 6), (1980, 1, 1, 0, 0, 0), (2107, 12, 31, 23, 59, 58)]


def test_empty_archive():
    layout = ArchiveLayout([])
    assert layout.length == 22
    with zipfile.ZipFile(io.BytesIO(whole(layout))) as archive:
        assert archive.namelist() == []


@pytest.fixture
def unzip():
    path = shutil.which("unzip")
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("unzip is not installed, and CI must check archives with it (apt-get install -y unzip)")
        pytest.skip("unzip is not installed (apt-get install -y unzip); zipfile's checks still ran")
    return path


def test_unzip_tests_the_archive(three, tmp_path, unzip):
    layout, contents, _ = three
    path = tmp_path / "three.zip"
    path.write_bytes(whole(layout))
    result = subprocess.run([unzip, "-t", str(path)], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No errors detected" in result.stdout
    extracted = tmp_path / "out"
    subprocess.run([unzip, "-q", str(path), "-d", str(extracted)], check=True, timeout=60)
    for name, data in contents.items():
        assert (extracted / name).read_bytes() == data
    assert (extracted / "photos/random.bin").stat().st_mode & 0o777 == 0o644


def optional_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed; an optional extra check")
    return path


@pytest.mark.parametrize("tool", ["bsdtar", "7z"])
def test_other_tools_extract_the_archive(three, tmp_path, tool):
    layout, contents, _ = three
    path = optional_tool(tool)
    archive, out = tmp_path / "three.zip", tmp_path / "out"
    archive.write_bytes(whole(layout))
    out.mkdir()
    if tool == "bsdtar":
        command = [path, "-xf", str(archive), "-C", str(out)]
    else:  # "x" checks each CRC as it extracts
        command = [path, "x", "-y", f"-o{out}", str(archive)]
    result = subprocess.run(command, capture_output=True, timeout=60, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    for name, data in contents.items():
        assert (out / name).read_bytes() == data


# -- ranges -------------------------------------------------------------------


def test_every_range_is_a_slice(three):
    layout, _, _ = three
    full = whole(layout)
    length = layout.length
    points = {0, 1, length - 1, length}
    for boundary in layout.segment_starts:
        points |= {boundary - 1, boundary, boundary + 1}
    points = sorted(p for p in points if 0 <= p <= length)
    pairs = [(a, b) for a in points for b in points if a <= b]
    rng = random.Random(7)
    for _ in range(300):
        a = rng.randrange(length + 1)
        pairs.append((a, rng.randrange(a, length + 1)))
    pairs += [(length - 1, None), (0, None), (length, None)]
    for a, b in pairs:
        got = b"".join(layout.iter_bytes(a, b, chunk_size=4096))
        assert got == full[a:b], (a, b)


@pytest.mark.parametrize(("start", "end"), [(-1, 10), (5, 4), (0, 10**12)])
def test_ranges_outside_the_archive_are_refused(three, start, end):
    layout, _, _ = three
    with pytest.raises(ValueError, match="range"):
        layout.iter_bytes(start, end)


def test_range_inside_second_file_opens_only_that_file(three):
    layout, contents, recorder = three
    full = whole(layout)
    recorder.opened.clear()
    second = full.index(contents[RESUME])
    got = b"".join(layout.iter_bytes(second + 10, second + 200))
    assert got == contents[RESUME][10:200]
    assert recorder.opened == [RESUME]


def test_range_inside_headers_opens_nothing(three):
    layout, _, recorder = three
    starts = layout.segment_starts
    b"".join(layout.iter_bytes(0, 20))  # the first local header
    b"".join(layout.iter_bytes(starts[-4], layout.length))  # the central directory and end records
    assert recorder.opened == []


def test_files_are_read_once_in_bounded_chunks(three):
    layout, contents, recorder = three
    chunk_size = 8192
    full = whole(layout, chunk_size=chunk_size)
    # The empty file is never opened: it has no bytes to send.
    assert recorder.opened == [RESUME, "photos/random.bin"]
    assert recorder.closed == 2
    assert max(recorder.read_sizes) <= chunk_size
    assert recorder.bytes_read == {RESUME: len(contents[RESUME]), "photos/random.bin": 300_000}

    recorder.__init__()
    data_start = full.index(contents["photos/random.bin"])
    b"".join(layout.iter_bytes(data_start + 1000, data_start + 51_000, chunk_size=chunk_size))
    assert recorder.bytes_read == {"photos/random.bin": 50_000}
    assert max(recorder.read_sizes) <= chunk_size


def test_an_abandoned_download_closes_its_file(three):
    layout, _, recorder = three
    chunks = layout.iter_bytes(chunk_size=1024)
    for _ in range(5):
        next(chunks)
    chunks.close()
    assert recorder.opened
    assert recorder.closed == len(recorder.opened)


def test_a_range_near_the_end_of_10000_files_is_cheap():
    recorder = Recorder()
    layout = ArchiveLayout([recorder.entry(f"file-{i:05}.txt", f"content {i}\n".encode()) for i in range(10_000)])
    full = whole(layout)
    recorder.__init__()
    started = time.perf_counter()
    for offset in range(1, 501):
        assert b"".join(layout.iter_bytes(layout.length - offset * 7)) == full[-offset * 7 :]
    # A scan from the first segment would build ~20,000 headers per range.
    assert time.perf_counter() - started < 2
    assert recorder.opened == []


# -- ZIP64 --------------------------------------------------------------------


def crc_of_zeros(size: int) -> int:
    zeros, crc = bytes(16 * 2**20), 0
    while size:
        step = min(size, len(zeros))
        crc = zlib.crc32(zeros[:step] if step < len(zeros) else zeros, crc)
        size -= step
    return crc


@pytest.fixture(scope="module")
def big_layout(tmp_path_factory):
    """A sparse file of 4 GiB and a bit, then a small file whose header lies past 4 GiB."""
    folder = tmp_path_factory.mktemp("zip64")
    if shutil.disk_usage(folder).free < 6 * GIB:
        pytest.skip("under 6 GiB free: a file system without sparse files could not hold the 4 GiB test file")
    big = folder / "big.bin"
    size = 4 * GIB + 1234
    try:
        with big.open("wb") as f:
            f.truncate(size)
    except OSError as error:
        pytest.skip(f"the file system refused a 4 GiB sparse file: {error}")
    if big.stat().st_blocks * 512 >= GIB:
        big.unlink()
        pytest.skip("the file system does not keep files sparse; the test would write 4 GiB")
    small = b"after the big one\n" * 100
    entries = [
        ArchiveEntry("big.bin", size, crc_of_zeros(size), WHEN, lambda: big.open("rb")),
        ArchiveEntry("small.txt", len(small), zlib.crc32(small), WHEN, lambda: io.BytesIO(small)),
    ]
    return ArchiveLayout(entries), size, small


def test_zip64_archive_opens_in_zipfile(big_layout):
    layout, size, small = big_layout
    assert layout.length > 4 * GIB
    with open_zip(layout) as archive:
        big_info, small_info = archive.infolist()
        assert (big_info.filename, big_info.file_size, big_info.compress_size) == ("big.bin", size, size)
        assert crc_of_zeros(size) == big_info.CRC
        assert small_info.header_offset > 2**32
        assert archive.read("small.txt") == small


def test_zip64_records_are_written(big_layout):
    layout, size, _ = big_layout
    # The big file's local header: size fields all ones, the ZIP64 field holding both sizes.
    local = whole(layout, start=0, end=layout.segment_starts[1])
    fields = struct.unpack("<IHHHHHIIIHH", local[:30])
    assert fields[0] == 0x04034B50
    assert fields[1] == 45
    assert fields[7:9] == (0xFFFFFFFF, 0xFFFFFFFF)
    extra = local[30 + fields[9] :]
    assert struct.unpack("<HHQQ", extra[:20]) == (1, 16, size, size)
    # The end: ZIP64 end record, its locator pointing at it, then the classic record.
    tail = whole(layout, start=layout.length - 98)
    record, locator, eocd = tail[:56], tail[56:76], tail[76:]
    assert record[:4] == b"PK\x06\x06"
    assert locator[:4] == b"PK\x06\x07"
    assert eocd[:4] == b"PK\x05\x06"
    *_, entries, _, _cd_size, cd_offset = struct.unpack("<IQHHIIQQQQ", record)
    assert (entries, cd_offset) == (2, layout.segment_starts[4])
    assert struct.unpack("<IIQI", locator)[2] == layout.length - 98
    assert struct.unpack("<IHHHHIIH", eocd)[6] == 0xFFFFFFFF, "the classic offset points at the ZIP64 record"


def test_zip64_range_across_4_gib_inside_the_big_file(big_layout):
    layout, size, _ = big_layout
    data_start = layout.segment_starts[1]
    # Across 2**32 in the archive and across 2**32 in the file (1234 bytes before its end).
    for first in (2**32 - 5000, data_start + 2**32 - 1000):
        got = b"".join(layout.iter_bytes(first, first + 2000, chunk_size=512))
        assert got == bytes(2000), first
    # The last bytes of the big file run straight into the small file's header.
    end = data_start + size
    assert b"".join(layout.iter_bytes(end - 4, end + 4)) == bytes(4) + b"PK\x03\x04"


@pytest.fixture(scope="module")
def big_zip(big_layout, tmp_path_factory):
    """The ZIP64 archive on disk, sparse: the big file's zeros are left as holes."""
    layout, _, _ = big_layout
    path = tmp_path_factory.mktemp("zip64-on-disk") / "big.zip"
    bounds = [*layout.segment_starts, layout.length]
    with path.open("wb") as out:
        out.truncate(layout.length)
        for first, end in itertools.pairwise(bounds):
            if end - first < GIB:  # every segment but the big file's data
                out.seek(first)
                out.writelines(layout.iter_bytes(first, end))
    return path


def test_zip64_archive_passes_unzip(big_layout, big_zip, unzip):
    _, size, small = big_layout
    # Testing only small.txt reads its data past 4 GiB, not the 4 GiB of zeros.
    result = subprocess.run([unzip, "-t", str(big_zip), "small.txt"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    listing = subprocess.run([unzip, "-l", str(big_zip)], capture_output=True, text=True, timeout=60, check=True)
    assert str(size) in listing.stdout
    assert "small.txt" in listing.stdout
    with zipfile.ZipFile(big_zip) as archive:
        assert archive.read("small.txt") == small


def test_zip64_archive_tests_and_extracts_with_7z(big_layout, big_zip, tmp_path):
    _, _, small = big_layout
    path = optional_tool("7z")
    # A few seconds here: 7z checks the CRC of all 4 GiB, and that it is a ZIP64 archive.
    result = subprocess.run([path, "t", str(big_zip)], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Everything is Ok" in result.stdout
    assert "Zip64" in result.stdout
    result = subprocess.run(
        [path, "x", "-y", f"-o{tmp_path}", str(big_zip), "small.txt"], capture_output=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "small.txt").read_bytes() == small


def test_more_than_65535_entries_use_the_zip64_end_record():
    count = 65_536 + 10
    layout = ArchiveLayout([ArchiveEntry(f"n{i}", 0, 0, WHEN, lambda: io.BytesIO()) for i in range(count)])
    full = whole(layout)
    eocd = struct.unpack("<IHHHHIIH", full[-22:])
    assert eocd[3:5] == (0xFFFF, 0xFFFF)
    assert full[-98:-94] == b"PK\x06\x06"
    with zipfile.ZipFile(io.BytesIO(full)) as archive:
        infos = archive.infolist()
        assert len(infos) == count
        assert infos[-1].filename == f"n{count - 1}"


# -- names --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "safe"),
    [
        ("../etc/passwd", "etc/passwd"),
        ("/abs/x", "abs/x"),
        ("a\\b", "a_b"),
        ("..\\..\\windows\\win.ini", ".._.._windows_win.ini"),
        ("", "file"),
        ("..", "file"),
        ("./. ./x/", "x"),
        ("C:/Windows/x.exe", "C_/Windows/x.exe"),
        ("line\nbreak\x00.txt", "line_break_.txt"),
        ("folder//inner/../file.txt", "folder/inner/file.txt"),
        ("Re\u0301sume\u0301.pdf", "Résumé.pdf"),  # NFD (macOS) becomes NFC
        ("with spaces and ümlauts.txt", "with spaces and ümlauts.txt"),
    ],
)
def test_safe_name(given, safe):
    assert safe_name(given) == safe


def test_long_names_are_cut_keeping_the_extension():
    name = safe_name("é" * 300 + ".pdf")
    assert len(name.encode()) <= 255
    assert name.endswith("é.pdf")
    assert unique_names(["x" * 300 + ".pdf"] * 2)[1].endswith("x (2).pdf")


def test_duplicates_get_numbers_deterministically():
    given = ["report.pdf", "Report.PDF", "report (2).pdf", "report.pdf", "a", "a/b.txt", "../report.pdf", ""]
    expected = [
        "report.pdf",
        "Report (3).PDF",  # "report (2).pdf" is taken by a file of that very name
        "report (2).pdf",
        "report (4).pdf",
        "a (2)",  # a file may not take a folder's name
        "a/b.txt",
        "report (5).pdf",
        "file",
    ]
    assert unique_names(given) == expected
    assert unique_names(given) == expected


def test_extracting_hostile_names_stays_inside(tmp_path):
    recorder = Recorder()
    hostile = ["../etc/passwd", "/abs/x", "a\\b", "", "..", "../../../../tmp/evil", "x/../../y", "x", "x"]
    layout = ArchiveLayout([recorder.entry(name, name.encode() + b"!") for name in hostile])
    target = tmp_path / "target"
    with zipfile.ZipFile(io.BytesIO(whole(layout))) as archive:
        assert len(set(archive.namelist())) == len(hostile)
        archive.extractall(target)
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) == len(hostile)
    for path in written:
        assert path.resolve().is_relative_to(target.resolve())
    # "x/../../y" becomes "x/y": "x" is a folder, so the files named "x" are renamed.
    assert layout.names == ["etc/passwd", "abs/x", "a_b", "file", "file (2)", "tmp/evil", "x/y", "x (2)", "x (3)"]


# -- mistakes -----------------------------------------------------------------


def test_a_file_shorter_than_declared_raises():
    recorder = Recorder()
    layout = ArchiveLayout([recorder.entry("a.txt", b"12345"), recorder.entry("short.bin", b"abc", size=10)])
    with pytest.raises(FileSizeMismatch, match=r"'short.bin': declared 10 bytes, but the file is 3 bytes"):
        whole(layout)
    assert recorder.closed == 2


def test_a_file_longer_than_declared_raises():
    recorder = Recorder()
    layout = ArchiveLayout([recorder.entry("long.bin", b"abcdefgh", size=4)])
    chunks = layout.iter_bytes()
    assert next(chunks)[:4] == b"PK\x03\x04", "the header is sent first..."
    with pytest.raises(FileSizeMismatch, match="declared 4 bytes"):
        next(chunks)  # ...but not a byte of the wrong file


def test_a_file_that_shrinks_while_read_raises():
    class Shrinking(io.BytesIO):
        def seek(self, offset, whence=io.SEEK_SET):
            if whence == io.SEEK_END:
                return 100  # promises the declared size, then runs dry
            return super().seek(offset, whence)

    entry = ArchiveEntry("s.bin", 100, 0, WHEN, lambda: Shrinking(b"x" * 40))
    with pytest.raises(FileSizeMismatch, match="ended early"):
        whole(ArchiveLayout([entry]))


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("size", -1, "size"),
        ("crc32", 2**32, "crc32"),
        ("modified", datetime(2026, 1, 1), "aware"),  # naive on purpose
    ],
)
def test_bad_metadata_is_refused(field, value, message):
    entry = {"name": "a", "size": 1, "crc32": 0, "modified": WHEN, "open": io.BytesIO} | {field: value}
    with pytest.raises(ValueError, match=message):
        ArchiveLayout([ArchiveEntry(**entry)])


# -- determinism and the fingerprint --------------------------------------------


def test_same_entries_same_bytes_and_fingerprint(three):
    layout, contents, _ = three
    recorder = Recorder()
    again = ArchiveLayout([recorder.entry(name, data) for name, data in contents.items()])
    assert whole(again) == whole(layout)
    assert again.fingerprint == layout.fingerprint
    assert len(layout.fingerprint) == 64


def test_fingerprint_follows_metadata(three):
    layout, contents, _ = three
    recorder = Recorder()

    def fingerprint(**changes):
        entries = []
        for name, data in contents.items():
            if name == RESUME:
                entries.append(recorder.entry(name, data, **changes))
            else:
                entries.append(recorder.entry(name, data))
        return ArchiveLayout(entries).fingerprint

    assert fingerprint() == layout.fingerprint
    assert fingerprint(when=WHEN + timedelta(hours=1)) != layout.fingerprint
    assert fingerprint(when=WHEN + timedelta(seconds=1)) != layout.fingerprint
    assert fingerprint(crc=zlib.crc32(contents[RESUME]) ^ 1) != layout.fingerprint
    renamed = ArchiveLayout([recorder.entry(f"x-{name}", data) for name, data in contents.items()])
    assert renamed.fingerprint != layout.fingerprint


def test_module_does_not_import_django():
    source = Path(__file__).resolve().parent.parent.joinpath("links", "archive.py").read_text()
    assert "import django" not in source
    assert "from django" not in source
