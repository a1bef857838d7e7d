"""The lease on SQLite: an advisory flock() on a file beside the database.

Every daemon of a SQLite database runs on the machine that holds the file
(WAL's shared memory demands it), so the kernel can arbitrate: the daemon
that holds an exclusive flock() on `<db>.<name>.lease` holds the lease.
There is nothing to renew, so an idle holder spends no wake-up and no write
on it (a renewed row cost ~0.02 % of a core on its own: docs/benchmarks.md,
"Idle wake-ups"), and the kernel releases the lock the moment its holder dies,
SIGKILL included, so a stand-by takes over at once instead of after a ttl.

A stand-by tries LOCK_EX | LOCK_NB whenever the daemon looks (about once a
second), and a thread of its own blocks in flock() meanwhile: the kernel
wakes it when the holder dies or lets go, it hands its locked descriptor to
the lease and wakes the daemon (`on_taken`).

The lock must never outlive this process: the file is opened O_CLOEXEC (no
exec'd program inherits it) and a forked child closes its copies at once
(a flock belongs to the open file, which a fork shares: a child that kept
it would hold the lease after its parent died).

The `expiry_lease` row is only written for those who read it (the daemon's
"standing by: held by ..." line, an administrator): once when the lock is
taken (owner, expires_at = HELD_UNTIL, as nobody can know when it will be
free) and on release (expires_at = now). After a crash it still names the
dead holder until the next daemon takes the lock, which it does at once.
The lock, not the row, decides; correctness depends on neither (each expiry
is a conditional UPDATE).
"""

import contextlib
import fcntl
import logging
import math
import os
import threading
import time
import weakref
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from django.db import IntegrityError, connections, transaction

from expiry.lease import new_owner_id
from expiry.models import Lease
from expiry.store import to_datetime

logger = logging.getLogger("expiry")

SUFFIX = ".lease"
# The row's expires_at while a daemon holds the lock: held until released.
HELD_UNTIL = datetime(9999, 12, 31, tzinfo=UTC)


def lock_path(using: str = "default", name: str = "runexpiry") -> Path | None:
    """The lock file of lease `name` beside the SQLite database behind
    `using`; None when there is no such file (not SQLite, or in memory)."""
    connection = connections[using]
    if connection.vendor != "sqlite" or connection.is_in_memory_db():
        return None
    return Path(f"{connection.settings_dict['NAME']}.{name}{SUFFIX}")


def open_lock_file(path: Path) -> int:
    umask = os.umask(0o077)  # beside the database, as private as it
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    finally:
        os.umask(umask)


class LockLease:
    """This process's hold on the lease called `name`, as a lock on `path`.

    The daemon's interface, as LeaseKeeper's (expiry/lease.py): keep(),
    held, seconds_until_renewal(), release(), holder(), name, owner.
    """

    def __init__(
        self,
        path: str | Path,
        name: str = "runexpiry",
        *,
        owner: str | None = None,
        clock: Callable[[], float] | None = None,
        using: str = "default",
    ):
        self.path = Path(path)
        self.name = name
        self.owner = owner or new_owner_id()
        self.clock = clock or time.time
        self.using = using
        # Called from the waiting thread once it took the lock (the daemon's
        # wake-up), so a stand-by starts at once rather than at its next look.
        self.on_taken: Callable[[], None] | None = None
        self._mutex = threading.Lock()
        self._fd: int | None = None  # not None exactly while we hold the lock
        self._waiter: LockWaiter | None = None
        self._recorded = False  # the row names us
        _leases.add(self)

    def __str__(self) -> str:
        return f"lease lock {self.path}"

    @property
    def held(self) -> bool:
        return self._fd is not None

    def seconds_until_renewal(self) -> float:
        return math.inf  # the kernel keeps it

    def keep(self, *, early: bool = False) -> bool:
        """Take the lock if it is free; return whether we hold it. Holding it
        costs nothing here: no system call, no query."""
        with self._mutex:
            if self._fd is None:
                self._try_lock()
        if self._fd is not None and not self._recorded:
            self._record()
        return self._fd is not None

    def release(self) -> None:
        """Let go of the lock (a stand-by takes it at once) and stop waiting for it."""
        with self._mutex:
            fd, self._fd = self._fd, None
            self._waiter = None  # dismissed: it lets the lock go once it gets it
        if fd is None:
            return
        os.close(fd)  # the only descriptor of its open file: the lock goes with it
        self._recorded = False
        Lease.objects.using(self.using).filter(name=self.name, owner=self.owner).update(
            expires_at=to_datetime(self.clock())
        )

    def holder(self) -> tuple[str, float] | None:
        """Who the row says took the lock and has not released it, if anyone."""
        row = Lease.objects.using(self.using).filter(name=self.name).values_list("owner", "expires_at").first()
        if row is None or row[1].timestamp() <= self.clock():
            return None
        return row[0], row[1].timestamp()

    # --- helpers ---------------------------------------------------------------

    def _try_lock(self) -> None:
        with _no_fork:  # a child forked before self._fd is set would keep a copy nobody closes
            fd = open_lock_file(self.path)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
            except BaseException:
                os.close(fd)
                raise
            else:
                self._fd = fd
                return
        if self._waiter is None:
            self._waiter = LockWaiter(self)
            self._waiter.start()

    def adopt(self, waiter: "LockWaiter", fd: int) -> bool:
        """The waiter's descriptor now holds the lock: make it ours, unless
        the waiter was dismissed meanwhile (the caller then closes it)."""
        with self._mutex:
            if waiter is not self._waiter:
                return False
            self._waiter = None
            if self._fd is not None:  # cannot happen: two open files cannot both hold it
                return False
            self._fd, waiter.fd = fd, None  # ours to close now
        if self.on_taken is not None:
            self.on_taken()
        return True

    def waiter_failed(self, waiter: "LockWaiter") -> None:
        """The waiter could not wait for the lock: the next look starts another."""
        with self._mutex:
            if self._waiter is waiter:
                self._waiter = None

    def _record(self) -> None:
        """Name this daemon in the row, once per taking of the lock."""
        rows = Lease.objects.using(self.using).filter(name=self.name)
        with transaction.atomic(using=self.using):
            if not rows.update(owner=self.owner, expires_at=HELD_UNTIL):
                try:
                    with transaction.atomic(using=self.using):
                        Lease.objects.using(self.using).create(name=self.name, owner=self.owner, expires_at=HELD_UNTIL)
                except IntegrityError:  # a daemon with a row lease got there first
                    rows.update(owner=self.owner, expires_at=HELD_UNTIL)
        self._recorded = True

    def forget_in_child(self) -> None:
        """In a forked child: close this process's copy of the held descriptor
        without unlocking it (the lock is the parent's)."""
        self._mutex = threading.Lock()  # a thread that held it was not forked
        fd, self._fd, self._waiter, self._recorded = self._fd, None, None, False
        _close_copy(fd)


class LockWaiter(threading.Thread):
    """Block in flock() on a descriptor of its own until the lock is ours,
    then hand the descriptor to the lease. No timeout, so no wake-ups; when
    dismissed (release()) it ends once it gets the lock, letting it go."""

    def __init__(self, lease: LockLease):
        super().__init__(name="runexpiry-lease", daemon=True)
        self.lease = lease
        self.fd: int | None = None
        _waiters.add(self)

    def run(self) -> None:
        try:
            with _no_fork:  # as in LockLease._try_lock
                self.fd = open_lock_file(self.lease.path)
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except OSError:
            logger.warning("cannot wait for the lease lock on %s", self.lease.path, exc_info=True)
            self._close()
            self.lease.waiter_failed(self)
            return
        if not self.lease.adopt(self, self.fd):
            self._close()

    def _close(self) -> None:
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)


_leases: "weakref.WeakSet[LockLease]" = weakref.WeakSet()
# Held from a lock file's open() until its descriptor is recorded, and across
# fork(): a child then sees every descriptor it must close (a fork between the
# two left the child a copy that kept the lock once the parent's thread got it).
_no_fork = threading.Lock()
_waiters: "weakref.WeakSet[LockWaiter]" = weakref.WeakSet()


def _close_copy(fd: int | None) -> None:
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


def _forget_locks_in_child() -> None:
    """In a forked child: close the copies of every lock descriptor, held or
    waited on (a dismissed waiter's too), without unlocking: LOCK_UN would
    free the parent's lock as well. The waiting threads were not forked."""
    for waiter in list(_waiters):
        fd, waiter.fd = waiter.fd, None
        _close_copy(fd)
    for lease in list(_leases):
        lease.forget_in_child()
    _no_fork.release()  # held by the thread that forked, the only one here


os.register_at_fork(before=_no_fork.acquire, after_in_parent=_no_fork.release, after_in_child=_forget_locks_in_child)
