"""The bodies of download responses: a range of one file, or a range of a
zip produced as it is sent. Each reports, when it closes, how far the client
can have got, so the response's reservation gives back what was not sent."""

from links.archive import ArchiveLayout
from links.delivery import Delivery

# Read and write in 256 KiB pieces: 4 KiB (FileResponse's default) costs a
# Python round trip per page of a 100 MB file.
BLOCK_SIZE = 256 * 1024


class _Settling:
    """What both bodies share: the stretch [first, end) they send, how far
    they got, and the one report at close (`on_close(sent_until)`)."""

    def __init__(self, first: int, end: int, *, on_close, delivery: Delivery | None):
        self.position = self.first = first
        self.end = end
        self.on_close = on_close
        self.delivery = delivery
        self.closed = False

    def sent_until(self) -> int:
        """The bytes read, or fewer when the connection broke and `delivery`
        knows what the connection sent."""
        if self.position >= self.end or self.delivery is None:
            return self.position
        received = self.delivery.received_at_most()
        return self.position if received is None else min(self.position, self.first + received)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self._release()
        finally:
            self.on_close(self.sent_until())

    def _release(self) -> None:
        raise NotImplementedError


class RangeReader(_Settling):
    """Read [first, end) of an open file (FileResponse reads it)."""

    def __init__(self, handle, first: int, end: int, *, on_close, delivery: Delivery | None = None):
        super().__init__(first, end, on_close=on_close, delivery=delivery)
        handle.seek(first)
        self.handle = handle

    def read(self, size: int = -1) -> bytes:
        remaining = self.end - self.position
        if remaining <= 0:
            return b""
        data = self.handle.read(remaining if size is None or size < 0 else min(size, remaining))
        self.position += len(data)
        return data

    def _release(self) -> None:
        self.handle.close()


class ArchiveStream(_Settling):
    """Bytes [first, end) of a zip (links.archive), as an iterable of chunks."""

    def __init__(self, layout: ArchiveLayout, first: int, end: int, *, on_close, delivery: Delivery | None = None):
        super().__init__(first, end, on_close=on_close, delivery=delivery)
        self.chunks = layout.iter_bytes(first, end, chunk_size=BLOCK_SIZE)

    def __iter__(self):
        for chunk in self.chunks:
            self.position += len(chunk)
            yield chunk

    def _release(self) -> None:
        self.chunks.close()
