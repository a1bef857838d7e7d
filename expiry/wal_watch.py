"""Wake the SQLite daemon when its database is written, instead of every 2 s.

The daemon's safety net (a `PRAGMA data_version` look for rows written
without a notice: another program, a datagram dropped from a full queue)
ran every 2 s whether or not anything was written, and that look was all an
idle daemon woke for (~0.3-0.5 ms each: docs/benchmarks.md, "Idle wake-ups").
Every commit appends to the `-wal` file (a checkpoint writes the database
file), so Linux's inotify on the database's folder tells us when a look can
find something: an idle database costs no look at all.

The thread blocks in select() on the inotify descriptor and a stop socket,
with no timeout. On a write to the database, its `-wal` or its `-journal`
it calls `on_write` (the daemon looks now), then rests `pause` seconds
(SAFETY_INTERVAL) and calls it again if more was written meanwhile: at most
one look per pause however fast the writes come, and a write without a
notice is seen at most `pause` after it, as with the clock it replaces.
A commit is several writes (one per WAL frame), so the first event can come
before the commit ends and that look find nothing: the next one finds it.
The `-shm` file is written through mmap, which inotify does not see; SQLite
never commits through it alone.
"""

import contextlib
import ctypes
import logging
import os
import select
import socket
import struct
import threading
from collections.abc import Callable
from pathlib import Path

logger = logging.getLogger("expiry")

# linux/inotify.h
IN_MODIFY = 0x002
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_Q_OVERFLOW = 0x4000
WATCHED = IN_MODIFY | IN_CREATE | IN_MOVED_TO
EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of name

_libc = ctypes.CDLL(None, use_errno=True)


def watch_folder(folder: Path) -> int:
    """An inotify descriptor (non-blocking, close-on-exec) watching `folder`."""
    if not hasattr(_libc, "inotify_init1"):  # not Linux: the daemon keeps its clock
        raise OSError("inotify is not available")
    fd = _libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "inotify_init1 failed")
    if _libc.inotify_add_watch(fd, os.fsencode(folder), WATCHED) < 0:
        error = ctypes.get_errno()
        os.close(fd)
        raise OSError(error, f"cannot watch {folder}")
    return fd


def names_written(events: bytes, names: frozenset[bytes]) -> bool:
    """Whether a batch of inotify events says one of `names` was written
    (an overflowed queue says it may have been)."""
    offset = 0
    while offset + EVENT.size <= len(events):
        _wd, mask, _cookie, length = EVENT.unpack_from(events, offset)
        start = offset + EVENT.size
        offset = start + length
        if mask & IN_Q_OVERFLOW or events[start:offset].rstrip(b"\0") in names:
            return True
    return False


def drain(fd: int) -> bytes:
    """Every event queued on the non-blocking inotify descriptor."""
    chunks = []
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    return b"".join(chunks)


class WalWatch(threading.Thread):
    def __init__(self, database: str | Path, on_write: Callable[[], None], *, pause: float):
        super().__init__(name="runexpiry-walwatch", daemon=True)
        path = Path(database)
        self.folder = path.parent
        self.names = frozenset(os.fsencode(path.name + suffix) for suffix in ("", "-wal", "-journal"))
        self.on_write = on_write
        self.pause = pause
        self.watching = False  # the daemon looks every pause seconds otherwise
        self.writes_seen = 0  # times it called on_write
        self.stopping = threading.Event()
        # stop() writes to one end; select() also waits on the other, so it
        # needs no timeout (expiry.watchers.NotifyListener does the same).
        self._stop_reader, self._stop_writer = socket.socketpair()

    def stop(self) -> None:
        self.stopping.set()
        with contextlib.suppress(OSError):  # closed: the thread has ended
            self._stop_writer.send(b"\0")

    def run(self) -> None:
        fd = None
        try:
            fd = watch_folder(self.folder)
            self.watching = True
            while not self.stopping.is_set():
                ready, _, _ = select.select([fd, self._stop_reader], [], [])
                if fd not in ready or not names_written(drain(fd), self.names):
                    continue
                self.written()
                # Rest, then one more look if anything was written meanwhile.
                while not self.stopping.wait(self.pause) and names_written(drain(fd), self.names):
                    self.written()
        except OSError:
            logger.warning("cannot watch %s for writes; looking every %g s", self.folder, self.pause, exc_info=True)
        finally:
            was_watching, self.watching = self.watching, False
            if was_watching and not self.stopping.is_set():
                self.written()  # so the daemon goes back to its clock now
            if fd is not None:
                os.close(fd)
            self._stop_writer.close()
            self._stop_reader.close()

    def written(self) -> None:
        self.writes_seen += 1
        self.on_write()
