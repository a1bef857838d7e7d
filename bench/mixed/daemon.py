"""`manage.py runexpiry` as a process of its own beside gunicorn, as `make
run` starts it, logging every expiry to an id log (expiry/idlog.py).

Ready means: it has expired the canary share the seeder left already due
(bench/mixed/due.py), so its start-up and first window load are done.
Stopped (SIGTERM, then SIGKILL) whatever happens.
"""

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bench.db import REPO_ROOT
from bench.web import server

READY_TIMEOUT_S = 60.0
# PostgreSQL tags the daemon's connections with this (libpq reads PGAPPNAME),
# so the wait-event sampler (waits.py) tells them from gunicorn's.
APPLICATION_NAME = "bench-mixed-runexpiry"


@dataclass
class Daemon:
    process: subprocess.Popen
    id_log: Path
    log: Path
    ready_s: float | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    def logged_ids(self) -> set[int]:
        try:
            text = self.id_log.read_text()
        except FileNotFoundError:
            return set()
        # A line being appended may be cut short: only whole lines count.
        return {int(line.split()[0]) for line in text.splitlines(keepends=True) if line.endswith("\n")}

    def wait_expired(self, share_id: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_alive()
            if share_id in self.logged_ids():
                return True
            time.sleep(0.02)
        return False

    def run_delay_s(self) -> float:
        """Seconds its live threads have spent runnable but waiting for a CPU
        (schedstat's second field): the time the machine, not the database,
        kept the daemon from running."""
        total = 0
        with contextlib.suppress(FileNotFoundError):
            for tid in os.listdir(f"/proc/{self.pid}/task"):
                path = f"/proc/{self.pid}/task/{tid}/schedstat"
                with contextlib.suppress(FileNotFoundError, ProcessLookupError), open(path) as f:
                    total += int(f.read().split()[1])
        return total / 1e9

    def check_alive(self) -> None:
        if self.process.poll() is not None:
            raise RuntimeError(f"runexpiry exited ({self.process.returncode}):\n{self.tail()}")

    def tail(self, chars: int = 2000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:].strip() or "(no output)"
        except OSError:
            return "(no log)"


@contextlib.contextmanager
def runexpiry(env: dict[str, str], workdir: Path, name: str, canary: int) -> Iterator[Daemon]:
    """Run the daemon until the block ends, once it has expired `canary`."""
    id_log, log = workdir / f"{name}.expired", workdir / f"{name}.log"
    # --verbosity 0: no log line per batch (the benchmark reads the id log).
    command = [sys.executable, "manage.py", "runexpiry", "--verbosity", "0", "--log-expired-ids", str(id_log)]
    with open(log, "ab") as sink:
        process = subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            env={**env, "PGAPPNAME": APPLICATION_NAME},
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=server.die_with_parent,
        )
    daemon = Daemon(process, id_log, log)
    started = time.monotonic()
    try:
        if not daemon.wait_expired(canary, READY_TIMEOUT_S):
            raise RuntimeError(f"runexpiry did not expire the canary within {READY_TIMEOUT_S:g} s:\n{daemon.tail()}")
        daemon.ready_s = time.monotonic() - started
        yield daemon
    finally:
        server.stop(process)
