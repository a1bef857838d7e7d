"""What `make run` and `make dev` run: the web server and the expiry daemon
side by side (and the malware scan worker, `runscans`, when CLAMD_URL is
set), stopped together.

    python -m microcloud.serve -- <the web server's command line>

Ctrl-C, SIGTERM or SIGHUP stops both gracefully (SIGTERM to each, then a
wait) and exits 0: stopping is how the service is meant to end. If either
ends on its own (a port already taken, a crash), the other is stopped and
its exit status is this one's.

Each child has a session of its own, so a terminal's Ctrl-C reaches them
once, as this process's SIGTERM: hit by the terminal's SIGINT as well, a
gunicorn 27 worker sometimes hung until --graceful-timeout and runexpiry
sometimes never returned from its join(). Run from a terminal, this process
also takes the terminal's foreground for a process group of its own (and
gives it back at the end): Ctrl-C then reaches it and not make, which dies
by any fatal signal it receives itself whatever its recipe does, and so
`make run` ends with status 0 too.
"""

import contextlib
import os
import select
import signal
import subprocess
import sys
from collections.abc import Iterator

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Stop(Exception):
    """A stop signal arrived."""


def _stop(signum, frame):
    raise Stop


@contextlib.contextmanager
def terminal_foreground() -> Iterator[None]:
    """This process leads the terminal's foreground group while the block runs."""
    if not os.isatty(0):
        yield
        return
    try:
        before = os.tcgetpgrp(0)
        os.setpgid(0, 0)
        _set_foreground(os.getpgrp())
    except OSError:  # not allowed here (no job control): leave the terminal as it is
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            _set_foreground(before)


def _set_foreground(group: int) -> None:
    # A process outside the foreground may take the terminal only with SIGTTOU ignored.
    previous = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    try:
        os.tcsetpgrp(0, group)
    finally:
        signal.signal(signal.SIGTTOU, previous)


def _unblock() -> None:
    """In a child, before it runs its program: the stop signals reach it again."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


def serve(web: list[str]) -> int:
    expiry = [sys.executable, "manage.py", "runexpiry"]
    children: list[subprocess.Popen] = []
    # Each stop signal also writes a byte here (from C, as it arrives), so the
    # wait below sees one that came before it began: see first_to_end().
    wakeup_reader, wakeup_writer = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wakeup_writer, warn_on_full_buffer=False)
    for sig in STOP_SIGNALS:
        signal.signal(sig, _stop)
    status = 0
    try:
        # Held while both start, so a stop cannot come between a start and its record.
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            for command in (expiry, *workers(), web):
                children.append(subprocess.Popen(command, start_new_session=True, preexec_fn=_unblock))
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        ended = first_to_end(children, wakeup_reader)
        status = ended.wait()
        print(f"{' '.join(ended.args[:3])} ended (status {status}); stopping the rest", file=sys.stderr)
    except Stop:
        status = 0
    finally:
        for sig in STOP_SIGNALS:  # a second Ctrl-C must not cut the graceful stop short
            signal.signal(sig, signal.SIG_IGN)
        for child in children:
            if child.returncode is None:
                child.terminate()
        for child in children:
            child.wait()
        signal.set_wakeup_fd(-1)
        os.close(wakeup_reader)
        os.close(wakeup_writer)
    return status


def workers() -> list[list[str]]:
    """The background workers beside the expiry daemon: runscans while scanning is on."""
    if os.environ.get("CLAMD_URL"):
        return [[sys.executable, "manage.py", "runscans"]]
    return []


def first_to_end(children: list[subprocess.Popen], wakeup_reader: int) -> subprocess.Popen:
    """Block until a child ends and return it; a stop signal raises Stop meanwhile.

    Not os.wait(): Python runs a handler between bytecodes, so a signal landing
    just before the wait() call only marked Stop as due, and the service went
    on until a child ended by itself. select() returns for the signal's byte
    even then, and the loop's next bytecode raises Stop.
    """
    pidfds = {os.pidfd_open(child.pid): child for child in children}
    try:
        while True:
            ready, _, _ = select.select([wakeup_reader, *pidfds], [], [])
            for fd in ready:
                if fd in pidfds:  # readable once that child has ended
                    return pidfds[fd]
            with contextlib.suppress(BlockingIOError):
                os.read(wakeup_reader, 512)
    finally:
        for fd in pidfds:
            os.close(fd)


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "--" or len(argv) < 2:
        print("usage: python -m microcloud.serve -- <web server command line>", file=sys.stderr)
        return 2
    with terminal_foreground():
        return serve(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
