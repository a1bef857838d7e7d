"""How the smoke tests run a benchmark: as a newcomer would, `python -m ...`
from the repository root, its errors shown when it fails."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
# The database of this test run, which the benchmark measures too.
VENDOR = "postgresql" if os.environ.get("DATABASE_URL", "").startswith("postgres") else "sqlite"
UNDER_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def run_module(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """`python -m <args>`; fails the test with the end of stderr unless it exits 0."""
    done = subprocess.run([sys.executable, "-m", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def require_wrk() -> None:
    """Skip without wrk (apt's package), except under CI, which must have it."""
    if shutil.which(os.environ.get("WRK", "wrk")) is None:
        if UNDER_CI:
            pytest.fail("wrk is required under CI (apt-get install -y wrk)")
        pytest.skip("wrk is not installed (apt-get install -y wrk, or make install-wrk)")


def run_load_smoke(module: str, out: Path) -> dict:
    """A wrk-driven benchmark (`module`) at smoke size on this run's database;
    its figures, as written to `out`."""
    require_wrk()
    command = [module, "--smoke", "--databases", VENDOR, "--json", str(out)]
    if VENDOR == "postgresql":
        command += ["--pg-url", os.environ["DATABASE_URL"]]  # the server; the bench makes its own database
    done = run_module(*command, timeout=240)
    assert "\nTARGETS\n" in done.stdout
    return json.loads(out.read_text())


def measured_here(run: dict) -> dict:
    """The figures of this run's database, which measured without an error."""
    assert set(run["databases"]) == {VENDOR}
    measured = run["databases"][VENDOR]
    assert "error" not in measured, measured.get("error")
    return measured
