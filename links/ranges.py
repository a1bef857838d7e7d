"""Byte ranges of a download (RFC 9110, section 14), the subset we serve.

One range per request: `bytes=a-b`, `bytes=a-` or `bytes=-n`. Anything else
(several ranges, another unit, bad syntax, an If-Range that no longer
matches) is ignored and the whole file is sent, as the RFC allows; a range
that starts past the end is unsatisfiable (416).
"""

import re
from dataclasses import dataclass

SINGLE_RANGE = re.compile(r"bytes=(?P<first>[0-9]{0,19})-(?P<last>[0-9]{0,19})")


class Unsatisfiable(Exception):
    """The range starts at or after the end of the file."""


@dataclass(frozen=True)
class ByteRange:
    first: int  # first byte sent
    end: int  # one past the last byte sent

    @property
    def length(self) -> int:
        return self.end - self.first

    def content_range(self, size: int) -> str:
        return f"bytes {self.first}-{self.end - 1}/{size}"


def requested_range(header: str | None, size: int, *, if_range: str | None, etag: str) -> ByteRange | None:
    """Return the one range to send, or None for the whole file.

    Raise Unsatisfiable for a well-formed range that no byte of the file can
    satisfy.
    """
    if not header:
        return None
    if if_range is not None and if_range.strip() != etag:
        # A date, a weak or another entity tag: the client's partial copy may
        # be of other bytes; send it all.
        return None
    match = SINGLE_RANGE.fullmatch(header.strip())
    if match is None:
        return None
    first, last = match["first"], match["last"]
    if first == "":
        if last == "":
            return None
        suffix = int(last)
        if suffix == 0 or size == 0:
            raise Unsatisfiable
        return ByteRange(max(0, size - suffix), size)
    start = int(first)
    if last != "" and int(last) < start:
        return None  # invalid: ignored
    if start >= size:
        raise Unsatisfiable
    end = size if last == "" else min(int(last) + 1, size)
    return ByteRange(start, end)
