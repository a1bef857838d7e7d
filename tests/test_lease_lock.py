"""SQLite's lease: a flock() on a file beside the database (expiry/lease_lock.py).

Real SQLite files, real processes, real locks: a holder in another process
is SIGKILLed, releases, forks and execs, and a keeper here must (or must
not) get the lock.
"""

import fcntl
import os
import stat
import subprocess
import sys
import threading
import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from expiry.lease import LeaseKeeper
from expiry.lease_lock import HELD_UNTIL, LockLease, lock_path
from expiry.models import Lease
from expiry.service import lease_for
from tests.helpers import REPO_ROOT, kill, subprocess_env, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

# A stand-by must get the lock this soon after its holder died or let go
# (the kernel frees it at once; a row lease took its ttl, 5 s, plus a look).
PROMPT = 2.0


def sqlite_only():
    if lock_path() is None:
        pytest.skip("the lease is a lock only on a SQLite file")


@pytest.fixture
def leases():
    """Make LockLeases on this test database's lock file; release them all after."""
    sqlite_only()
    made = []

    def make(owner: str) -> LockLease:
        lease = LockLease(lock_path(), owner=owner)
        taken = threading.Event()
        lease.on_taken = taken.set
        lease.taken = taken
        made.append(lease)
        return lease

    yield make
    for lease in made:
        lease.release()


# A lease holder in a process of its own, driven through stdin.
HOLDER = r"""
import os, subprocess, sys, time
import django
django.setup()
from expiry.lease_lock import LockLease

def say(line):
    os.write(1, f"{line}\n".encode())  # one write: a forked child says its own lines too

lease = LockLease(sys.argv[1], owner=sys.argv[2])
say("held" if lease.keep() else "not held")
while command := sys.stdin.readline().strip():
    if command == "release":
        lease.release()
        say("released")
    elif command == "fork":
        pid = os.fork()
        if pid == 0:
            say(f"child {os.getpid()} holds {lease.held}")
            time.sleep(120)
            os._exit(0)
        say(f"forked {pid}")
    elif command == "exec":
        child = subprocess.Popen(["sleep", "120"], close_fds=False)  # every inheritable descriptor
        say(f"forked {child.pid}")
time.sleep(120)
"""


class Holder:
    def __init__(self, owner: str = "holder"):
        self.process = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(lock_path()), owner],
            cwd=REPO_ROOT,
            env=subprocess_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.others: list[int] = []  # processes it started, ended by the test

    def say(self, command: str) -> str:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self.read()

    def read(self) -> str:
        return self.process.stdout.readline().strip()

    def fork(self) -> tuple[int, str]:
        """Fork the holder; return the child's pid and what the child said."""
        lines = sorted([self.say("fork"), self.read()])  # in either order
        child = int(lines[1].split()[1])
        self.others.append(child)
        assert lines[0] == f"child {child} holds False", lines
        return child, lines[0]

    def close(self) -> None:
        for pid in self.others:
            try:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass  # not our child (the forked one): gone with the kill
            except ProcessLookupError:
                pass
        kill(self.process)
        self.process.stdout.close()
        self.process.stdin.close()


@pytest.fixture
def holder():
    sqlite_only()
    started = []

    def start(owner: str = "holder") -> Holder:
        process = Holder(owner)
        started.append(process)
        assert process.read() == "held"
        return process

    yield start
    for process in started:
        process.close()


# --- one process ----------------------------------------------------------------


def test_the_first_keeper_takes_the_lock_and_a_second_cannot(leases):
    alpha, beta = leases("alpha"), leases("beta")
    assert alpha.keep()
    assert not beta.keep()
    assert alpha.held
    assert not beta.held
    assert not beta.taken.wait(0.3)
    assert Lease.objects.get(name="runexpiry").owner == "alpha"
    assert beta.holder() == ("alpha", HELD_UNTIL.timestamp())


def test_the_lock_file_sits_beside_the_database_private_and_close_on_exec(leases):
    old = os.umask(0)  # the lease's own umask, not the caller's, decides
    try:
        alpha = leases("alpha")
        alpha.path.unlink(missing_ok=True)
        assert alpha.keep()
    finally:
        os.umask(old)
    assert str(alpha.path) == f"{connection.settings_dict['NAME']}.runexpiry.lease"
    assert alpha.path == lock_path()
    assert stat.S_IMODE(alpha.path.stat().st_mode) == 0o600
    assert fcntl.fcntl(alpha._fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC


def test_holding_the_lock_costs_no_query_and_never_wakes_the_daemon(leases):
    """Nothing to renew: the idle daemon's wake-ups are its safety looks alone."""
    alpha = leases("alpha")
    assert alpha.keep()  # takes it and names itself in the row, once
    with CaptureQueriesContext(connection) as queries:
        for _ in range(5):
            assert alpha.keep(early=True)
    assert queries.captured_queries == []
    assert alpha.seconds_until_renewal() == float("inf")


def test_release_lets_a_waiting_stand_by_take_the_lock_at_once(leases):
    alpha, beta = leases("alpha"), leases("beta")
    assert alpha.keep()
    assert not beta.keep()  # and waits for it in a thread
    released_at = time.monotonic()
    alpha.release()
    assert beta.taken.wait(PROMPT)
    assert time.monotonic() - released_at < PROMPT
    assert beta.held  # before it even looked again
    assert beta.keep()
    assert Lease.objects.get(name="runexpiry").owner == "beta"
    assert not alpha.keep()


def test_release_marks_the_row_released(leases):
    alpha = leases("alpha")
    assert alpha.keep()
    alpha.release()
    assert not alpha.held
    assert Lease.objects.get(name="runexpiry").expires_at <= timezone.now()
    assert alpha.holder() is None


def test_a_stand_by_released_while_waiting_never_takes_the_lock(leases):
    alpha, beta, gamma = leases("alpha"), leases("beta"), leases("gamma")
    assert alpha.keep()
    assert not beta.keep()  # waiting
    beta.release()  # the daemon stopped while standing by
    alpha.release()
    assert wait_until(gamma.keep, PROMPT)
    assert not beta.held
    assert not beta.taken.is_set()


# --- other processes: SIGKILL, release, fork, exec ------------------------------------


def test_a_stand_by_takes_the_lock_at_once_when_its_holder_is_sigkilled(leases, holder):
    other = holder("holder")
    beta = leases("beta")
    assert not beta.keep()
    assert beta.holder() == ("holder", HELD_UNTIL.timestamp())
    assert not beta.taken.wait(0.5)  # held: no way in
    killed_at = time.monotonic()
    kill(other.process)
    assert beta.taken.wait(PROMPT)
    assert time.monotonic() - killed_at < PROMPT
    assert beta.held
    assert beta.keep()
    assert Lease.objects.get(name="runexpiry").owner == "beta"


def test_a_stand_by_takes_the_lock_at_once_when_its_holder_releases_it(leases, holder):
    other = holder("holder")
    beta = leases("beta")
    assert not beta.keep()
    assert other.say("release") == "released"
    assert beta.taken.wait(PROMPT)
    assert beta.keep()


def test_a_forked_child_does_not_keep_the_lock_after_its_parent_died(leases, holder):
    other = holder("holder")
    child, said = other.fork()
    assert said == f"child {child} holds False"  # its copy of the lease knows it is not the holder
    beta = leases("beta")
    assert not beta.keep()  # the parent still holds it
    kill(other.process)
    assert beta.taken.wait(PROMPT), "the forked child kept the lock"
    os.kill(child, 0)  # the child is still alive: the lock was never its to hold


def test_a_forked_child_does_not_keep_a_lock_its_parent_was_waiting_for(leases, holder):
    """A stand-by that stopped waiting still has a thread blocked in flock();
    once it gets the lock it lets it go, which a child's copy would prevent."""
    first = holder("first")
    stand_by = Holder("stand-by")
    assert stand_by.read() == "not held"  # and waiting in a thread
    assert stand_by.say("release") == "released"  # dismissed, still blocked
    try:
        stand_by.fork()
        assert first.say("release") == "released"
        beta = leases("beta")
        assert wait_until(beta.keep, PROMPT), "the forked child kept the lock its parent was waiting for"
    finally:
        stand_by.close()


def test_an_executed_program_does_not_inherit_the_lock(leases, holder):
    other = holder("holder")
    program = int(other.say("exec").split()[1])
    other.others.append(program)
    beta = leases("beta")
    assert not beta.keep()
    kill(other.process)
    assert beta.taken.wait(PROMPT), "the program the holder started kept the lock"
    os.kill(program, 0)  # still running


# --- which lease --------------------------------------------------------------------


def test_the_database_vendor_chooses_the_lease():
    lease = lease_for(ttl=5.0, owner="alpha")
    if connection.vendor == "sqlite":
        assert isinstance(lease, LockLease)
        assert lease.path == lock_path()
    else:  # PostgreSQL: daemons may be on several machines; the row lease
        assert type(lease) is LeaseKeeper
        assert lease.ttl == 5.0
        assert lock_path() is None
