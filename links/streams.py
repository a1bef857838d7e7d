"""The bodies of download responses: a range of one file, or a range of a
zip produced as it is sent. Each reports, when it closes, how far the client
can have got, so the response's reservation gives back what was not sent."""

from links.archive import ArchiveLayout
from links.delivery import Delivery

# Read and write in 256 KiB pieces: 4 KiB (FileResponse's default) costs a
# Python round trip per page of a 100 MB file.
BLOCK_SIZE = 256 * 1024


class RangeReader:
    """Read [first, end) of an open file; on close, report how far the client
    can have got: the bytes read, or fewer when the connection broke and
    `delivery` knows what it acknowledged (links.delivery)."""

    def __init__(self, handle, first: int, end: int, *, on_close, delivery: Delivery | None = None):
        handle.seek(first)
        self.handle = handle
        self.position = first
        self.end = end
        self.first = first
        self.on_close = on_close
        self.delivery = delivery
        self.closed = False

    def read(self, size: int = -1) -> bytes:
        remaining = self.end - self.position
        if remaining <= 0:
            return b""
        data = self.handle.read(remaining if size is None or size < 0 else min(size, remaining))
        self.position += len(data)
        return data

    def sent_until(self) -> int:
        return _sent_until(self.position, self.first, self.end, self.delivery)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self.handle.close()
        finally:
            self.on_close(self.sent_until())


class ArchiveStream:
    """Bytes [first, end) of a zip (links.archive), as an iterable of chunks;
    on close, reports how far the client can have got, as RangeReader does."""

    def __init__(self, layout: ArchiveLayout, first: int, end: int, *, on_close, delivery: Delivery | None = None):
        self.chunks = layout.iter_bytes(first, end, chunk_size=BLOCK_SIZE)
        self.position = self.first = first
        self.end = end
        self.on_close = on_close
        self.delivery = delivery
        self.closed = False

    def __iter__(self):
        for chunk in self.chunks:
            self.position += len(chunk)
            yield chunk

    def sent_until(self) -> int:
        return _sent_until(self.position, self.first, self.end, self.delivery)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self.chunks.close()
        finally:
            self.on_close(self.sent_until())


def _sent_until(position: int, first: int, end: int, delivery: Delivery | None) -> int:
    """How far a response that read up to `position` can have reached the client."""
    if position >= end or delivery is None:
        return position
    received = delivery.received_at_most()
    return position if received is None else min(position, first + received)
