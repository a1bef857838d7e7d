"""The mixed benchmark runs end to end at smoke sizes and reports sane figures.

This checks that `python -m bench.mixed` works (its own database, gunicorn,
runexpiry as its own process, wrk mixing downloads and creates, the id log
read back, JSON written) on the database this pass of the suite uses, not how
fast anything is: the target is judged on full runs (docs/benchmarks.md, "Lateness under web load").
Also here: the figures are split and checked the right way, on made-up data.
"""

import pytest

from bench.mixed import lateness, profile
from bench.mixed import report as mixed_report
from bench.mixed.plan import SMOKE
from bench.tests.running import VENDOR, measured_here, run_load_smoke

pytestmark = pytest.mark.bench


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench-mixed") / "smoke.json"
    return run_load_smoke("bench.mixed", out)


@pytest.fixture(scope="module")
def result(run):
    return measured_here(run)


def test_the_web_load_mixed_downloads_and_creates_without_errors(result):
    web = result["web"]
    assert web["failed"] == 0, web["errors"]
    assert web["requests"] > 0
    assert 0 < result["creates_per_s"] < web["req_per_s"]


def test_every_share_due_during_the_load_was_expired_after_its_deadline(run, result):
    seeded = result["lateness"]["seeded"]
    assert seeded["due"] == SMOKE.due_per_s * SMOKE.seconds == result["seeded"]["count"]
    assert result["lateness"]["created"]["due"] > 0  # created over REST, due during the load
    for source in ("all", "seeded", "created"):
        part = result["lateness"][source]
        assert part["not_expired"] == 0, source
        assert part["lateness"]["n"] == part["due"], source
        # Never before the deadline; and decided before committed.
        assert part["lateness"]["min_ms"] >= 0, source
        assert part["decided"]["min_ms"] >= 0, source
        assert part["write"]["min_ms"] >= 0, source
    (target,) = run["targets"]
    assert target["status"] in {"met", "MISSED"}
    assert run["meta"]["preset"] == "smoke"


def test_postgresql_waits_were_sampled(result):
    if VENDOR != "postgresql":
        assert result["pg_waits"] is None
        return
    waits = result["pg_waits"]
    assert waits["error"] is None
    assert waits["samples"] > 0


# --- the figures, on made-up data ---------------------------------------------------


def test_lateness_is_split_by_source_and_counts_what_was_not_expired():
    due = {1: 100.0, 2: 100.5, 7: 101.0, 8: 101.5}  # 1 and 2 seeded, 7 and 8 created over REST
    logged = {1: (100.001, 100.003), 2: (100.502, 100.510), 7: (101.1, 101.2)}
    out = lateness.summarize(due, logged, seeded=(1, 2))
    assert (out["all"]["due"], out["all"]["not_expired"]) == (4, 1)
    assert (out["seeded"]["due"], out["created"]["due"], out["created"]["not_expired"]) == (2, 2, 1)
    assert out["seeded"]["lateness"]["max_ms"] == pytest.approx(10)  # committed at 100.510
    assert out["seeded"]["decided"]["max_ms"] == pytest.approx(2)
    assert out["seeded"]["write"]["max_ms"] == pytest.approx(8)
    assert out["created"]["lateness"]["max_ms"] == pytest.approx(200)


def _result(p99_ms: float, not_expired: int = 0, failed: int = 0) -> dict:
    part = {"due": 100, "not_expired": not_expired, "lateness": {"p99_ms": p99_ms}}
    return {"lateness": {"all": part}, "web": {"failed": failed}}


def test_the_target_is_p99_of_5_ms_with_every_share_expired_and_no_failed_request():
    assert mixed_report.check_target("sqlite", _result(5.0))["status"] == "met"
    assert mixed_report.check_target("sqlite", _result(5.01))["status"] == "MISSED"
    assert mixed_report.check_target("sqlite", _result(1.0, not_expired=1))["status"] == "MISSED"
    assert mixed_report.check_target("sqlite", _result(1.0, failed=1))["status"] == "MISSED"
    assert mixed_report.check_target("sqlite", {"error": "x"})["status"] == "not measured"


def test_the_profile_tells_busy_handler_sleeps_from_idle_waits(tmp_path):
    thread = "thread (10): runexpiry;Thread.run (threading.py:1);ShareStore._claim (expiry/store.py:208)"
    other = "thread (11): runexpiry-checkpoint;WalCheckpointer.run (expiry/checkpoint.py:65);Event.wait (t.py:1)"
    stacks = tmp_path / "daemon.txt"
    stacks.write_text(
        f"{thread};sqlite3_step (libsqlite3.so.0);sqlite3InvokeBusyHandler (libsqlite3.so.0);usleep (libc.so.6) 6\n"
        f"{thread};sqlite3_step (libsqlite3.so.0);sqlite3VdbeExec (libsqlite3.so.0) 1\n"
        "thread (10): runexpiry;ExpiryDaemon.wait (expiry/daemon.py:90);Event.wait (threading.py:629) 3\n"
        f"{other} 50\n"
    )
    out = profile.read(stacks)
    assert out["samples"] == 10  # the expiry thread's only
    assert out["categories"] == {
        "expiry: SQLite busy handler, sleeping for the write lock": 60.0,
        "expiry: SQLite running SQL (CPU)": 10.0,
        "waiting for the next deadline or notice (idle)": 30.0,
    }
