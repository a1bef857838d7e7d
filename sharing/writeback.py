"""Starting the disk's writeback of a range early, so a chunk's closing
fdatasync waits for little.

A PATCH syncs its bytes before it answers (its offset must survive a crash
of the machine). Left to the end, that sync writes the whole chunk while
the request reads nothing; started as the bytes arrive (Linux's
sync_file_range with SYNC_FILE_RANGE_WRITE, which queues the range and
returns), the disk writes while the network reads. Nothing here is a
guarantee: the fdatasync still decides. Where the call is missing (not
Linux), this does nothing.
"""

import ctypes
import ctypes.util
import logging

logger = logging.getLogger("sharing")

SYNC_FILE_RANGE_WRITE = 2  # <linux/fs.h>: start writeback of dirty pages, do not wait


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
