"""How to start, recognise as ready, and stop each engine process.

All three run as separate processes so each one's CPU, wake-ups and memory
are its own, read from /proc. Every wait is bounded, and a context manager
makes sure a child is stopped (SIGTERM, then SIGKILL) whatever happens.
"""

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench import procstats
from bench.db import REPO_ROOT, django_env


@dataclass(frozen=True)
class Engine:
    key: str  # used in JSON
    label: str  # used in tables
    kind: str  # "daemon", "seed", "sweep"

    def argv(
        self, db: Path, *, daemon_refresh_interval: float, sweep_interval: float, daemon_coalesce: float
    ) -> list[str]:
        if self.kind == "daemon":
            # The real command, with its default pick-up interval (50 ms).
            # --verbosity 0: the command sets the "expiry" logger from its
            # verbosity (default 1 = INFO, a line per batch), which overrides
            # LOG_LEVEL=WARNING; only 0 makes it as quiet as the other engines.
            return [
                *(sys.executable, "manage.py", "runexpiry", "--verbosity", "0"),
                *("--refresh-interval", str(daemon_refresh_interval)),
                *("--coalesce", str(daemon_coalesce)),
                *("--log-expired-ids", str(expired_log(db))),
            ]
        if self.kind == "seed":
            return [sys.executable, "-m", "bench.seed_loop", str(db)]
        return [sys.executable, "-m", "bench.sweep", str(db), "--interval", str(sweep_interval)]


def expired_log(db: Path) -> Path:
    """Where our daemon logs each expiry with its stamp and commit time."""
    return db.with_suffix(".expired")


DAEMON = Engine("daemon", "ours (runexpiry)", "daemon")
SEED = Engine("seed_loop", "seed-style loop", "seed")
SWEEP = Engine("sweep", "sweep", "sweep")
ENGINES = {e.key: e for e in (DAEMON, SEED, SWEEP)}


class EngineFailed(RuntimeError):
    pass


class RunningEngine:
    """One engine process on one database; use as a context manager."""

    def __init__(self, engine: Engine, db: Path, log: Path, **settings: float):
        self.engine = engine
        self.db = db
        self.log_path = log
        self.exit_code: int | None = None
        self._log = open(log, "wb")  # noqa: SIM115 -- closed in stop()
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            engine.argv(db, **settings),
            cwd=REPO_ROOT,
            env=django_env(db),
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            # Its own session: a Ctrl-C on the benchmark reaches the benchmark
            # only, which then stops the engine in order (see stop()).
            start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def __enter__(self) -> "RunningEngine":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def wait_ready(self, timeout: float = 60.0) -> float:
        """Wait until the engine has opened the database and gone quiet, and
        return how long that took since the process started.

        Opening the database is its first query; "quiet" (under 20 % of a
        core over 100 ms) means its start-up and first window load are done,
        whatever its size: the seed loop's 1 ms ticks use ~3 %.
        """
        deadline = self.started + timeout
        target = os.path.realpath(self.db)
        while not self._has_open(target):
            self._check_alive_before(deadline, "open the database")
            time.sleep(0.01)
        previous = procstats.sample(self.pid).cpu_run_s
        while True:
            self._check_alive_before(deadline, "settle")
            time.sleep(0.1)
            current = procstats.sample(self.pid).cpu_run_s
            if current - previous < 0.02:
                return time.monotonic() - self.started
            previous = current

    def _has_open(self, target: str) -> bool:
        try:
            fds = os.listdir(f"/proc/{self.pid}/fd")
        except FileNotFoundError:
            return False
        for fd in fds:
            try:
                if os.readlink(f"/proc/{self.pid}/fd/{fd}") == target:
                    return True
            except OSError:
                continue
        return False

    def _check_alive_before(self, deadline: float, what: str) -> None:
        if self.process.poll() is not None:
            raise EngineFailed(
                f"{self.engine.label} exited ({self.process.returncode}) before it could {what}: {self.log_tail()}"
            )
        if time.monotonic() > deadline:
            raise EngineFailed(f"{self.engine.label} did not {what} in time: {self.log_tail()}")

    def check_alive(self) -> None:
        if self.process.poll() is not None:
            raise EngineFailed(f"{self.engine.label} died ({self.process.returncode}): {self.log_tail()}")

    def stop(self, timeout: float = 15.0) -> int:
        """SIGTERM, wait up to `timeout`, then SIGKILL. Idempotent."""
        try:
            if self.process.poll() is None:
                self.process.send_signal(signal.SIGTERM)
                try:
                    self.process.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait(5)
        finally:
            self._log.close()
        self.exit_code = self.process.returncode
        return self.exit_code

    def log_tail(self, chars: int = 2000) -> str:
        if not self._log.closed:
            self._log.flush()
        text = self.log_path.read_text(errors="replace")
        return text[-chars:].strip() or "(no output)"
