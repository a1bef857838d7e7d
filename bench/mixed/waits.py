"""Where the daemon's time goes during a mixed run, measured, not guessed.

- PostgreSQL: pg_stat_activity sampled every SAMPLE_S from a connection of
  our own: for each backend of the run's database, whether it is running a
  statement and what it waits on (wait_event_type:wait_event; none while on
  CPU), grouped by who it is (application_name: the daemon's is set through
  PGAPPNAME, gunicorn's too) and by statement.
- Either database: py-spy (if installed, --profile) records the daemon's
  stacks during the load, idle threads included, with native frames, so time
  in SQLite's busy handler (sleeping for the write lock) shows apart from
  time running SQL. profile.py reads the stacks.
"""

import contextlib
import shutil
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import psycopg

SAMPLE_S = 0.01
MAX_SAMPLES = 20_000  # 200 s at SAMPLE_S: a bound whatever the caller does
WEB_APPLICATION_NAME = "bench-mixed-web"

ACTIVITY_SQL = """
SELECT application_name, state, coalesce(wait_event_type || ':' || wait_event, 'CPU (no wait event)'),
       left(regexp_replace(query, '\\s+', ' ', 'g'), 48)
FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
"""


class ActivitySampler(threading.Thread):
    def __init__(self, database_url: str):
        super().__init__(name="pg-activity-sampler", daemon=True)
        self.database_url = database_url
        self.stopping = threading.Event()
        self.counts: Counter = Counter()
        self.samples = 0
        self.error: str | None = None

    def run(self) -> None:
        try:
            with psycopg.connect(self.database_url, autocommit=True, connect_timeout=5) as conn:
                while not self.stopping.is_set() and self.samples < MAX_SAMPLES:
                    for app, state, wait, query in conn.execute(ACTIVITY_SQL):
                        if state == "active":
                            self.counts[(app or "?", wait, query)] += 1
                    self.samples += 1
                    self.stopping.wait(SAMPLE_S)
        except psycopg.Error as exc:
            self.error = f"{type(exc).__name__}: {exc}"

    def summary(self) -> dict:
        """Per application: in how many samples one of its backends ran a
        statement, by wait event and statement (most frequent first)."""
        by_app: dict[str, list] = {}
        for (app, wait, query), n in self.counts.most_common():
            by_app.setdefault(app, []).append({"wait": wait, "query": query, "samples": n})
        return {"samples": self.samples, "interval_s": SAMPLE_S, "active": by_app, "error": self.error}


@contextlib.contextmanager
def pg_activity(database_url: str) -> Iterator[ActivitySampler]:
    sampler = ActivitySampler(database_url)
    sampler.start()
    try:
        yield sampler
    finally:
        sampler.stopping.set()
        sampler.join(10)


def find_py_spy() -> str | None:
    return shutil.which("py-spy") or shutil.which(str(Path(sys.executable).with_name("py-spy")))


@contextlib.contextmanager
def py_spy(pid: int, output: Path, seconds: int, rate: int = 250) -> Iterator[subprocess.Popen | None]:
    """Record `pid` for `seconds` (py-spy's own bound) into `output`
    (collapsed stacks); stopped at the end of the block whatever happens."""
    spy = find_py_spy()
    if spy is None:
        yield None
        return
    command = [spy, "record", "--pid", str(pid), "--duration", str(seconds), "--rate", str(rate)]
    command += ["--idle", "--native", "--threads", "--format", "raw", "--output", str(output)]
    with open(output.with_suffix(".log"), "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield process
        # py-spy writes its file when its duration is over.
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(seconds + 15)
    finally:
        if process.poll() is None:
            process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(10)
        if process.poll() is None:
            process.kill()
            process.wait(5)
