"""Starting the disk's writeback of a file's new bytes early, so the sync
that closes the write waits for little.

A tus chunk syncs its bytes before it answers (its offset must survive a
crash of the machine), and a stored file is synced before its row is
listed (storage.disk). Left to that moment, the sync writes everything
while the request reads nothing; started as the bytes arrive (Linux's
sync_file_range with SYNC_FILE_RANGE_WRITE, which queues the range and
returns), the disk writes while the network reads. Nothing here is a
guarantee: the sync still decides. Where the call is missing (not Linux),
this does nothing.
"""

import ctypes
import ctypes.util
import logging

logger = logging.getLogger("sharing")

SYNC_FILE_RANGE_WRITE = 2  # <linux/fs.h>: start writeback of dirty pages, do not wait
# How many new bytes are handed to the disk at a time (256 KiB to 2 MiB
# measured alike: docs/benchmarks.md, "Uploads").
STEP = 2 * 1024 * 1024


def _load():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        call = libc.sync_file_range
    except (OSError, AttributeError):
        return None
    call.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    call.restype = ctypes.c_int
    return call


_sync_file_range = _load()


def available() -> bool:
    return _sync_file_range is not None


def start_writeback(fd: int, offset: int, length: int) -> None:
    """Ask the kernel to begin writing [offset, offset + length) of `fd` to
    disk, without waiting for it. A failure only loses the head start."""
    if _sync_file_range is None or length <= 0:
        return
    if _sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE) != 0:
        logger.debug("sync_file_range failed: errno %d", ctypes.get_errno())


class Writeback:
    """The bytes written to `fd` from `start` on, handed to the disk a STEP
    at a time: `due(position)` says whether a STEP has piled up since the
    last hand-over, `hand_over(position)` hands everything before
    `position` (the caller makes sure those bytes are in the page cache)."""

    def __init__(self, fd: int, start: int = 0):
        self.fd = fd
        self.queued = start  # written from here on and not yet handed over

    def due(self, position: int) -> bool:
        return position - self.queued >= STEP

    def hand_over(self, position: int) -> None:
        start_writeback(self.fd, self.queued, position - self.queued)
        self.queued = position
