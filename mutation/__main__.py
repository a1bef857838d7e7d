"""`python -m mutation`: the mutation run (`make mutants`; docs/testing.md).

Copies the tracked files (git ls-files) into one temporary directory per
worker, once; each worker writes a mutant into its copy, runs the module's
test files there on SQLite (pytest -x: the first failure kills it), and
writes the original back. The working tree is only read. Prints each
mutant's outcome, then killed / survived / timed out per module and every
survivor; exits 1 if a survivor is not a known equivalent (mutation.config)
or if the tests fail without any mutant.
"""

import argparse
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from mutation.config import EQUIVALENT, MODULES, TIMEOUT_FACTOR, TIMEOUT_SLACK
from mutation.operators import Mutant, mutants_of

ROOT = Path(__file__).resolve().parent.parent
# The settings need a key; the tests' own (pyproject.toml) is set by pytest-env.
SECRET_KEY = "test-only-secret-key-never-used-outside-the-test-suite-1f9a"
# Only the plugins the rule tests use: the others (schemathesis, hypothesis,
# playwright...) cost ~2 s of start-up in every one of the runs.
PLUGINS = ["pytest_django.plugin", "pytest_env.plugin", "pytest_timeout", "xdist.plugin"]


@dataclass
class Outcome:
    mutant: Mutant | None
    module: str
    verdict: str  # "killed", "survived", "timed out"; "passed"/"failed" for the unmutated run
    seconds: float
    output: str = ""


@dataclass
class Worker:
    """One copy of the tree, with its own test database."""

    number: int
    home: Path
    tree: Path = field(init=False)
    pristine: Path = field(init=False)
    database: Path = field(init=False)

    def __post_init__(self):
        self.tree = self.home / "tree"
        self.pristine = self.home / "pristine.sqlite3"
        self.database = self.home / "test.sqlite3"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "PYTEST_ADDOPTS")}
        env.update(
            SECRET_KEY=env.get("SECRET_KEY", SECRET_KEY),
            SQLITE_PATH=str(self.home / "var.sqlite3"),
            TEST_SQLITE_PATH=str(self.database),
            # No .pyc in the copy: a mutant of the same size written within the
            # second of the last one could otherwise be run from a stale .pyc.
            PYTHONDONTWRITEBYTECODE="1",
            PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
        )
        return env

    def prepare(self, files: list[str]) -> None:
        for name in files:
            source = ROOT / name
            if source.is_file() and not source.is_symlink():
                target = self.tree / name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
        # The migrated database, made once; each run starts from a copy of it
        # (pytest --reuse-db), so no run sees what another left, nor pays for
        # the migrations.
        subprocess.run(
            [sys.executable, "-m", "django", "migrate", "--noinput", "-v", "0", "--settings", "microcloud.settings"],
            cwd=self.tree,
            env={**self.env(), "SQLITE_PATH": str(self.pristine)},
            check=True,
        )

    def run_tests(self, tests: list[str], timeout: float | None) -> tuple[str, float, str]:
        """("passed" | "failed" | "timed out", seconds, the output's tail)."""
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.database}{suffix}").unlink(missing_ok=True)
        shutil.copyfile(self.pristine, self.database)
        command = [sys.executable, "-m", "pytest", *tests, "-x", "-q", "-p", "no:cacheprovider", "--reuse-db"]
        command += [f"--basetemp={self.home / 'tmp'}"]
        for plugin in PLUGINS:
            command += ["-p", plugin]
        started = time.monotonic()
        process = subprocess.Popen(
            command,
            cwd=self.tree,
            env=self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # its own process group: a timeout stops whatever it started
        )
        try:
            output, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
            return "timed out", time.monotonic() - started, output[-3000:]
        verdict = "passed" if process.returncode == 0 else "failed"
        return verdict, time.monotonic() - started, output[-3000:]

    def run_mutant(self, mutant: Mutant, tests: list[str], timeout: float) -> Outcome:
        path = self.tree / mutant.path
        original = path.read_text()
        path.write_text(mutant.source)
        try:
            verdict, seconds, output = self.run_tests(tests, timeout)
        finally:
            path.write_text(original)
        named = {"passed": "survived", "failed": "killed"}.get(verdict, verdict)
        return Outcome(mutant, mutant.path, named, seconds, output)


def equivalent_reason(mutant: Mutant) -> str | None:
    for path, line_text, original, mutated, reason in EQUIVALENT:
        if (path, line_text, original, mutated) == (mutant.path, mutant.line_text, mutant.original, mutant.mutated):
            return reason
    return None


def tracked_files() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    return [name for name in listed.stdout.decode().split("\0") if name]


def in_parallel(workers: list[Worker], jobs: list, do) -> list:
    """Run do(worker, job) for every job, each worker one job at a time."""
    pending: queue.Queue = queue.Queue()
    for job in jobs:
        pending.put(job)
    results, lock = [], threading.Lock()

    def loop(worker: Worker) -> None:
        while True:
            try:
                job = pending.get_nowait()
            except queue.Empty:
                return
            result = do(worker, job)
            with lock:
                results.append(result)

    threads = [threading.Thread(target=loop, args=(worker,), daemon=True) for worker in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mutation", description=__doc__.splitlines()[0])
    parser.add_argument("--module", action="append", choices=sorted(MODULES), help="only this module (repeatable)")
    parser.add_argument("--line", type=int, action="append", help="only mutants on this line (repeatable)")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    parser.add_argument("--json", type=Path, help="write every outcome here")
    args = parser.parse_args(argv)

    modules = args.module or list(MODULES)
    mutants = [m for path in modules for m in mutants_of(path, (ROOT / path).read_text())]
    if args.line:
        mutants = [m for m in mutants if m.line in args.line]
    if args.list:
        for mutant in mutants:
            print(mutant.describe())
        print(f"{len(mutants)} mutants")
        return 0

    started = time.monotonic()
    home = Path(tempfile.mkdtemp(prefix="microcloud-mutants-"))
    try:
        workers = [Worker(n, home / f"worker{n}") for n in range(max(1, args.workers))]
        files = tracked_files()
        print(f"=== copying {len(files)} tracked files for {len(workers)} workers into {home}", flush=True)
        in_parallel(workers, workers, lambda worker, _: worker.prepare(files))

        # The tests must pass without any mutant, and their time sets the timeouts.
        def baseline(worker: Worker, module: str) -> Outcome:
            verdict, seconds, output = worker.run_tests(MODULES[module], None)
            print(f"    {module}: tests {verdict} unmutated in {seconds:.1f} s", flush=True)
            return Outcome(None, module, verdict, seconds, output)

        print("=== the tests of each module, without mutants", flush=True)
        baselines = {o.module: o for o in in_parallel(workers, modules, baseline)}
        broken = [o for o in baselines.values() if o.verdict != "passed"]
        for outcome in broken:
            print(f"--- {outcome.module}: the tests fail without a mutant:\n{outcome.output}", flush=True)
        if broken:
            return 1

        print(f"=== {len(mutants)} mutants", flush=True)
        done = Counter()

        def run(worker: Worker, mutant: Mutant) -> Outcome:
            timeout = baselines[mutant.path].seconds * TIMEOUT_FACTOR + TIMEOUT_SLACK
            outcome = worker.run_mutant(mutant, MODULES[mutant.path], timeout)
            done["n"] += 1
            print(
                f"[{done['n']:3d}/{len(mutants)}] {outcome.verdict:9s} {outcome.seconds:5.1f} s  {mutant.describe()}",
                flush=True,
            )
            return outcome

        outcomes = in_parallel(workers, mutants, run)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    elapsed = time.monotonic() - started
    return report(modules, outcomes, elapsed, args.json)


def report(modules: list[str], outcomes: list[Outcome], elapsed: float, json_path: Path | None) -> int:
    order = {path: n for n, path in enumerate(modules)}
    outcomes.sort(key=lambda o: (order[o.module], o.mutant.line, o.mutant.original))
    print(f"\n=== mutation run: {len(outcomes)} mutants in {elapsed / 60:.1f} min")
    print(f"{'module':32s} {'mutants':>7s} {'killed':>7s} {'survived':>9s} {'equivalent':>11s} {'timed out':>10s}")
    unexplained = []
    for path in modules:
        mine = [o for o in outcomes if o.module == path]
        survived = [o for o in mine if o.verdict == "survived"]
        equivalent = [o for o in survived if equivalent_reason(o.mutant)]
        unexplained += [o for o in survived if not equivalent_reason(o.mutant)]
        counts = Counter(o.verdict for o in mine)
        print(
            f"{path:32s} {len(mine):7d} {counts['killed']:7d} {len(survived):9d} {len(equivalent):11d} "
            f"{counts['timed out']:10d}"
        )
    survivors = [o for o in outcomes if o.verdict == "survived"]
    if survivors:
        print("\nsurvivors:")
        for outcome in survivors:
            reason = equivalent_reason(outcome.mutant)
            print(f"  {outcome.mutant.describe()}")
            print(f"      {'equivalent: ' + reason if reason else 'NOT KNOWN EQUIVALENT: a test should kill it'}")
    if json_path:
        json_path.write_text(
            json.dumps(
                {
                    "minutes": round(elapsed / 60, 1),
                    "outcomes": [
                        {
                            "path": o.mutant.path,
                            "line": o.mutant.line,
                            "original": o.mutant.original,
                            "mutated": o.mutant.mutated,
                            "verdict": o.verdict,
                            "seconds": round(o.seconds, 1),
                        }
                        for o in outcomes
                    ],
                },
                indent=2,
            )
        )
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
