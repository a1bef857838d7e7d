"""A stored (uncompressed) ZIP archive whose every byte is known in advance.

The sizes and CRC-32s of the files are known before anything is sent (the
uploader stores them), so every header is written with its final values and
no data descriptor follows the data: the archive's bytes are a pure function
of the entries' metadata and the files' contents. That gives a
Content-Length up front and lets any byte range be produced on its own:
headers are built in memory (they are small) and file data is read straight
from the file at the right offset, each file opened only if the range needs
some of its bytes. See docs/archive.md for the choices made here.

Plain stdlib, no Django: the caller adapts its storage files to `open`.
"""

import hashlib
import io
import struct
import unicodedata
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from typing import BinaryIO

CHUNK_SIZE = 256 * 1024

# Bumped whenever the bytes produced for the same entries change, so that an
# ETag built from the fingerprint never names two different archives.
FORMAT_VERSION = b"microcloud-archive-1"

_MAX32 = 0xFFFFFFFF  # also the "see the ZIP64 record" marker, so never a real value
_MAX16 = 0xFFFF
_COMPONENT_BYTES = 255  # longest file name most file systems accept
_NAME_BYTES = 4096  # longer paths keep their last component only
_FALLBACK_NAME = "file"
_UNSAFE_CHARS = dict.fromkeys([*range(32), 127, ord("\\"), ord(":")], "_")

_LOCAL = struct.Struct("<IHHHHHIIIHH")  # 30 bytes, then name and extra
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")  # 46 bytes, then name and extra
_EOCD = struct.Struct("<IHHHHIIH")  # 22 bytes
_EOCD64 = struct.Struct("<IQHHIIQQQQ")  # 56 bytes
_LOCATOR64 = struct.Struct("<IIQI")  # 20 bytes

_VERSION_MADE_BY = (3 << 8) | 63  # Unix, so unzip applies the permissions below; APPNOTE 6.3
_NEEDS_PLAIN = 20
_NEEDS_ZIP64 = 45
_FLAG_UTF8 = 1 << 11
_UNIX_FILE_ATTRS = (0o100644 << 16) & _MAX32  # a regular file, rw-r--r--
_TAG_ZIP64 = 0x0001
_TAG_UNIX_TIME = 0x5455  # extended timestamp: the exact UTC time, which DOS dates lack


class ArchiveError(Exception):
    """The archive cannot be produced as its layout promised."""


class FileSizeMismatch(ArchiveError):
    """A file's actual length is not the size its entry declared.

    Raised while streaming, before or instead of the wrong bytes: the caller
    must cut the response short, since the promised bytes cannot be sent.
    """

    def __init__(self, name: str, declared: int, actual: int | None):
        self.name, self.declared, self.actual = name, declared, actual
        found = "ended early" if actual is None else f"is {actual} bytes"
        super().__init__(f"{name!r}: declared {declared} bytes, but the file {found}")


@dataclass(frozen=True)
class ArchiveEntry:
    name: str
    size: int
    crc32: int
    modified: datetime  # aware
    open: Callable[[], BinaryIO]  # called only when the file's bytes are needed


# -- names ------------------------------------------------------------------


def _fit(stem: str, ext: str, tag: str) -> str:
    """stem + tag + ext, the stem shortened so the whole fits one component."""
    room = _COMPONENT_BYTES - len((tag + ext).encode())
    if room < 1:  # an absurd "extension": treat it as part of the stem
        stem, ext = stem + ext, ""
        room = _COMPONENT_BYTES - len(tag.encode())
    encoded = stem.encode()
    if len(encoded) > room:
        stem = encoded[:room].decode(errors="ignore")  # never half a character
    return stem + tag + ext


def _split_ext(component: str) -> tuple[str, str]:
    dot = component.rfind(".")
    return (component[:dot], component[dot:]) if dot > 0 else (component, "")


def safe_name(name: str) -> str:
    """A relative path that extracts inside the target folder, on any system.

    "/" separates folders; a backslash, a colon (drive letters, NTFS streams)
    and control characters become "_"; empty components and those made only
    of dots and spaces ("..", ".", ". .") are dropped; each component is cut
    to 255 UTF-8 bytes (keeping its extension); the text is NFC-normalised;
    nothing left gives "file".
    """
    name = unicodedata.normalize("NFC", name)
    name = name.translate(_UNSAFE_CHARS)
    parts = [_fit(*_split_ext(p), "") for p in name.split("/") if p.strip(". ")]
    if len("/".join(parts).encode()) > _NAME_BYTES:
        parts = parts[-1:]
    return "/".join(parts) or _FALLBACK_NAME


def unique_names(names: Sequence[str]) -> list[str]:
    """safe_name() of each name, duplicates renamed "x (2).pdf", "x (3).pdf"...

    Comparison ignores case (Windows and macOS would overwrite), and a file
    may not take the name of another file's folder. The first of equal names
    keeps it; the others take the lowest free number, in input order, so the
    result depends only on the list.
    """
    safe = [safe_name(n) for n in names]
    folders = {"/".join(s.split("/")[:i]).casefold() for s in safe for i in range(1, s.count("/") + 1)}
    taken: set[str] = set(folders)
    result, renamed = list(safe), []
    for i, s in enumerate(safe):
        key = s.casefold()
        if key in taken:
            renamed.append(i)
        taken.add(key)
    for i in renamed:
        folder, _, last = safe[i].rpartition("/")
        stem, ext = _split_ext(last)
        n = 2
        while True:
            candidate = (folder + "/" if folder else "") + _fit(stem, ext, f" ({n})")
            if candidate.casefold() not in taken:
                break
            n += 1
        taken.add(candidate.casefold())
        result[i] = candidate
    return result


# -- times --------------------------------------------------------------------


def _dos_time(moment: datetime) -> tuple[int, int]:
    """(time, date) in MS-DOS form, in UTC, clamped to what DOS dates can hold."""
    utc = moment.astimezone(UTC)
    if utc.year < 1980:
        return 0, (1 << 5) | 1  # 1980-01-01 00:00:00
    if utc.year > 2107:
        return (23 << 11) | (59 << 5) | 29, (127 << 9) | (12 << 5) | 31  # 2107-12-31 23:59:58
    return (utc.hour << 11) | (utc.minute << 5) | (utc.second // 2), (
        ((utc.year - 1980) << 9) | (utc.month << 5) | utc.day
    )


def _unix_time_extra(moment: datetime) -> bytes:
    """The extended-timestamp field (mtime only), when a signed 32-bit value holds it."""
    seconds = int(moment.timestamp())
    if not 0 <= seconds < 2**31:
        return b""
    return struct.pack("<HHBI", _TAG_UNIX_TIME, 5, 1, seconds)


# -- layout -----------------------------------------------------------------


class _Member:
    """One entry, with everything its headers need; built once per layout."""

    __slots__ = ("crc", "data_offset", "dos", "entry", "header_offset", "name", "raw", "size", "unix_time")

    def __init__(self, entry: ArchiveEntry, name: str, header_offset: int):
        self.entry, self.name, self.raw = entry, name, name.encode()
        self.size, self.crc = entry.size, entry.crc32
        self.dos = _dos_time(entry.modified)
        self.unix_time = _unix_time_extra(entry.modified)
        self.header_offset = header_offset
        self.data_offset = header_offset + _LOCAL.size + len(self.raw) + len(self._local_extra())

    @property
    def big(self) -> bool:
        return self.size >= _MAX32

    def _local_extra(self) -> bytes:
        # The local ZIP64 field, when present, must hold both sizes (APPNOTE 4.5.3).
        zip64 = struct.pack("<HHQQ", _TAG_ZIP64, 16, self.size, self.size) if self.big else b""
        return zip64 + self.unix_time

    def local_header(self) -> bytes:
        size32 = _MAX32 if self.big else self.size
        time, date = self.dos
        extra = self._local_extra()
        needs = _NEEDS_ZIP64 if self.big else _NEEDS_PLAIN
        fields = (0x04034B50, needs, _FLAG_UTF8, 0, time, date, self.crc, size32, size32, len(self.raw), len(extra))
        return _LOCAL.pack(*fields) + self.raw + extra

    def central_header(self) -> bytes:
        # Only the values that do not fit go to the ZIP64 field, in the
        # order APPNOTE 4.5.3 fixes: sizes, then the header's offset.
        wide = [self.size, self.size] if self.big else []
        if self.header_offset >= _MAX32:
            wide.append(self.header_offset)
        zip64 = struct.pack(f"<HH{len(wide)}Q", _TAG_ZIP64, 8 * len(wide), *wide) if wide else b""
        extra = zip64 + self.unix_time
        size32 = _MAX32 if self.big else self.size
        offset32 = min(self.header_offset, _MAX32)
        time, date = self.dos
        needs = _NEEDS_ZIP64 if wide else _NEEDS_PLAIN
        fields = (0x02014B50, _VERSION_MADE_BY, needs, _FLAG_UTF8, 0, time, date, self.crc, size32, size32)
        tail = (len(self.raw), len(extra), 0, 0, 0, _UNIX_FILE_ATTRS, offset32)
        return _CENTRAL.pack(*fields, *tail) + self.raw + extra

    def central_length(self) -> int:
        wide = (2 if self.big else 0) + (self.header_offset >= _MAX32)
        return _CENTRAL.size + len(self.raw) + (4 + 8 * wide if wide else 0) + len(self.unix_time)


# Segment kinds: what produces a stretch of the archive's bytes.
_LOCAL_HEADER, _DATA, _CENTRAL_HEADER, _END = range(4)


class ArchiveLayout:
    """Where every byte of the archive comes from, computed once from metadata.

    `length` is the archive's size; `fingerprint` changes whenever its bytes
    would (given files that match their sizes and CRCs); `iter_bytes(start,
    end)` produces any stretch of it, reading only the files that stretch
    covers, each once, in chunks of at most `chunk_size` bytes.
    """

    def __init__(self, entries: Sequence[ArchiveEntry]):
        for e in entries:
            if not isinstance(e.size, int) or e.size < 0:
                raise ValueError(f"{e.name!r}: size must be an int >= 0, not {e.size!r}")
            if not isinstance(e.crc32, int) or not 0 <= e.crc32 <= _MAX32:
                raise ValueError(f"{e.name!r}: crc32 must be an unsigned 32-bit int, not {e.crc32!r}")
            if e.modified.utcoffset() is None:
                raise ValueError(f"{e.name!r}: modified must be an aware datetime")
        self._members: list[_Member] = []
        starts: list[int] = []
        kinds: list[tuple[int, int]] = []
        offset = 0
        for index, (entry, name) in enumerate(zip(entries, unique_names([e.name for e in entries]), strict=True)):
            member = _Member(entry, name, offset)
            self._members.append(member)
            starts.append(offset)
            kinds.append((_LOCAL_HEADER, index))
            if member.size:  # an empty file has no data segment: it is never opened
                starts.append(member.data_offset)
                kinds.append((_DATA, index))
            offset = member.data_offset + member.size
        self.central_offset = offset
        for index, member in enumerate(self._members):
            starts.append(offset)
            kinds.append((_CENTRAL_HEADER, index))
            offset += member.central_length()
        self.central_size = offset - self.central_offset
        starts.append(offset)
        kinds.append((_END, 0))
        self._end = self._end_records(offset)
        self.length = offset + len(self._end)
        self._starts, self._kinds = starts, kinds

    @property
    def names(self) -> list[str]:
        """The names in the archive, in entry order (safe and unique)."""
        return [m.name for m in self._members]

    @property
    def segment_starts(self) -> list[int]:
        """Where each header or data stretch begins (for tests and debugging)."""
        return list(self._starts)

    def data_bytes(self, start: int, end: int) -> int:
        """How many of the archive's bytes [start, end) are files' data (the
        rest are headers)."""
        return sum(
            max(0, min(end, m.data_offset + m.size) - max(start, m.data_offset)) for m in self._members if m.size
        )

    def _end_records(self, here: int) -> bytes:
        count, size, offset = len(self._members), self.central_size, self.central_offset
        eocd = _EOCD.pack(
            0x06054B50, 0, 0, min(count, _MAX16), min(count, _MAX16), min(size, _MAX32), min(offset, _MAX32), 0
        )
        if count < _MAX16 and size < _MAX32 and offset < _MAX32:
            return eocd
        # APPNOTE 4.3.14-4.3.15: the ZIP64 end record, then its locator,
        # right before the classic end record whose overflowing fields are
        # set to all ones. "Size of record" counts the bytes after itself.
        record = _EOCD64.pack(
            0x06064B50, _EOCD64.size - 12, _VERSION_MADE_BY, _NEEDS_ZIP64, 0, 0, count, count, size, offset
        )
        return record + _LOCATOR64.pack(0x07064B50, 0, here, 1) + eocd

    def _header(self, kind: int, index: int) -> bytes:
        if kind == _LOCAL_HEADER:
            return self._members[index].local_header()
        if kind == _CENTRAL_HEADER:
            return self._members[index].central_header()
        return self._end

    @cached_property
    def fingerprint(self) -> str:
        """A hex digest of every byte outside the files' data.

        Those bytes hold every name, size, CRC-32, time and offset, so equal
        fingerprints mean equal archives; fit for a strong ETag.
        """
        digest = hashlib.sha256(FORMAT_VERSION)
        for kind, index in self._kinds:
            if kind != _DATA:
                digest.update(self._header(kind, index))
        return digest.hexdigest()

    def iter_bytes(self, start: int = 0, end: int | None = None, *, chunk_size: int = CHUNK_SIZE) -> Iterator[bytes]:
        """The bytes [start, end) of the archive, as chunks.

        The range is checked now (ValueError), not at the first chunk. Files
        are read at most chunk_size bytes at a time; consecutive headers are
        joined into chunks of about chunk_size. A file whose length is not
        its declared size raises FileSizeMismatch, when opened or when it
        runs dry, before any wrong byte is yielded: the caller must then cut
        the response short.
        """
        end = self.length if end is None else end
        if not 0 <= start <= end <= self.length:
            raise ValueError(f"range [{start}, {end}) is not within [0, {self.length}]")
        if chunk_size < 1:
            raise ValueError("chunk_size must be positive")
        return self._iter(start, end, chunk_size)

    def _iter(self, start: int, end: int, chunk_size: int) -> Iterator[bytes]:
        pending = bytearray()  # consecutive headers are sent together, not a few bytes at a time
        position = start
        segment = bisect_right(self._starts, start) - 1
        while position < end:
            seg_start = self._starts[segment]
            kind, index = self._kinds[segment]
            if kind == _DATA:
                member = self._members[index]
                seg_end = seg_start + member.size
                stop = min(end, seg_end)
                if pending:
                    yield bytes(pending)
                    pending.clear()
                yield from _read_file(member, position - seg_start, stop - seg_start, chunk_size)
            else:
                header = self._header(kind, index)
                stop = min(end, seg_start + len(header))
                pending += header[position - seg_start : stop - seg_start]
                if len(pending) >= chunk_size:
                    yield bytes(pending)
                    pending.clear()
            position = stop
            segment += 1
        if pending:
            yield bytes(pending)


def _read_file(member: _Member, first: int, stop: int, chunk_size: int) -> Iterator[bytes]:
    """Bytes [first, stop) of the member's file, read once, chunk by chunk."""
    name, declared = member.name, member.size
    file = member.entry.open()
    try:
        # Checked before sending any of its bytes: a file that changed since
        # upload would otherwise shift or corrupt everything after it.
        actual = file.seek(0, io.SEEK_END)
        actual = file.tell() if actual is None else actual
        if actual != declared:
            raise FileSizeMismatch(name, declared, actual)
        file.seek(first)
        position = first
        while position < stop:
            chunk = file.read(min(chunk_size, stop - position))
            if not chunk:  # shrank while being read
                raise FileSizeMismatch(name, declared, None)
            position += len(chunk)
            yield chunk
    finally:
        file.close()
