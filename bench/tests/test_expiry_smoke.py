"""The benchmark runs end to end at smoke sizes and reports sane figures.

This checks that `python -m bench` works (real daemon, reference loop and
sweep as processes, every scenario, JSON written), not how fast anything is:
timing targets are judged on full-size runs (docs/benchmarks.md, "Expiry benchmark").
"""

import json
import os
from pathlib import Path

import pytest

from bench.tests.running import run_module
from expiry.window import WINDOW_PAGE_MAX

ENGINES = ("daemon", "seed_loop", "sweep")

# The benchmark builds its own SQLite databases whatever the suite runs on, so
# the PostgreSQL pass would only repeat the SQLite pass's ~45 s.
pytestmark = [
    pytest.mark.bench,
    pytest.mark.skipif(
        os.environ.get("DATABASE_URL", "").startswith("postgres"), reason="runs once, in the SQLite pass"
    ),
]
PER_ENGINE = ("spread", "rate", "burst", "idle", "pickup")
DAEMON_ONLY = {"rate"}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "smoke.json"
    done = run_module("bench", "--smoke", "--json", str(out))
    assert "OUR DAEMON'S TARGETS" in done.stdout
    return json.loads(out.read_text())


def test_every_engine_ran_every_scenario(report):
    scenarios = report["scenarios"]
    assert set(scenarios) == {*PER_ENGINE, "refresh"}
    for name in PER_ENGINE:
        expected = {"daemon"} if name in DAEMON_ONLY else set(ENGINES)
        assert set(scenarios[name]) == expected, name
        for engine, result in scenarios[name].items():
            assert "error" not in result, (name, engine, result.get("error"))


def test_the_daemon_reports_its_stamp_gaps_and_cpu_at_rate(report):
    rate = report["scenarios"]["rate"]["daemon"]
    assert rate["stamp_gap"]["n"] == report["sizes"]["rate_shares"]
    assert 0 <= rate["stamp_gap"]["max_ms"] < 1000
    assert 0 < rate["cpu_percent"] < 200
    burst = report["scenarios"]["burst"]["daemon"]
    assert burst["stamp_gap"]["n"] == report["sizes"]["burst_shares"]
    targets = {t["target"] for t in report["targets"]}
    assert {"10,000/s: p99 lateness <= 2 ms", "burst: ended_at at most 5 ms before its commit"} <= targets


@pytest.mark.parametrize("scenario", ["spread", "rate", "burst"])
def test_all_preloaded_shares_expired_with_non_negative_lateness(report, scenario):
    size = report["sizes"][f"{scenario}_shares"]
    for engine, result in report["scenarios"][scenario].items():
        assert result["shares"] == size, engine
        assert result["expired"] == size, engine
        assert result["not_expired"] == 0, engine
        assert result["negative_lateness"] == 0, engine
        lateness = result["lateness"]
        assert lateness["n"] == size, engine
        assert 0 <= lateness["min_ms"] <= lateness["p50_ms"] <= lateness["p99_ms"] <= lateness["max_ms"], engine
        assert result["exit_code"] == 0, engine


def test_burst_drain_figures(report):
    for engine, result in report["scenarios"]["burst"].items():
        assert result["drained"], engine
        assert result["drain_s"] >= 0, engine
        assert result["observed_drain_s"] >= 0, engine
        assert result["rows_per_s"] > 0, engine


def test_spread_cpu_was_measured(report):
    for engine, result in report["scenarios"]["spread"].items():
        assert result["cpu_s"] >= 0, engine
        assert result["cpu_run_s"] > 0, engine


@pytest.mark.parametrize("scenario", ["spread", "rate"])
def test_cpu_is_counted_from_the_first_deadline_not_through_the_idle_lead(report, scenario):
    span = report["sizes"][f"{scenario}_seconds"]
    result = report["scenarios"][scenario]["daemon"]
    # Counted from the engine's readiness instead, this would be minus the
    # headroom; how much headroom a loaded machine leaves varies, so the test
    # does not depend on it.
    assert result["cpu_counted_after_first_s"] >= 0
    # From the first deadline to the drain: the span and the drain's few polls.
    assert span - 0.05 <= result["cpu_window_s"]


def test_pickup_counts_match(report):
    size = report["sizes"]["pickup_shares"]
    for engine, result in report["scenarios"]["pickup"].items():
        assert result["shares"] == size, engine
        assert result["expired"] + result["not_expired"] == size, engine
        assert result["negative_lateness"] == 0, engine
        assert 0 <= result["late_over_10ms"] <= result["expired"], engine
    # Our daemon picks up shares written after its refresh; the reference
    # loop, whose next refresh is a day away, never sees them.
    assert report["scenarios"]["pickup"]["daemon"]["expired"] == size
    assert report["scenarios"]["pickup"]["seed_loop"]["expired"] == 0


def test_idle_figures_are_plausible(report):
    for engine, result in report["scenarios"]["idle"].items():
        for table in ("big", "small"):
            figures = result[table]
            assert figures["cpu_percent"] >= 0, engine
            assert figures["wakeups_per_s"] >= 0, engine
            assert figures["rss_mb"] > 1, engine
    # The reference loop's 1 ms sleep wakes it hundreds of times a second.
    assert report["scenarios"]["idle"]["seed_loop"]["big"]["wakeups_per_s"] > 100


def test_refresh_query_found_and_planned(report):
    refresh = report["scenarios"]["refresh"]
    assert refresh["window_rows"] == report["sizes"]["refresh_window"]
    assert refresh["probe_rows"] == refresh["window_rows"]
    # Read a page at a time: at least one statement a page.
    assert refresh["statements"] > refresh["window_rows"] // WINDOW_PAGE_MAX
    assert refresh["query_ms_median"] > 0
    assert refresh["plan"]
    assert refresh["uses_index"]


def test_report_has_machine_floor_ratios_and_targets(report):
    assert report["floor_event_wait_1ms"]["n"] == report["sizes"]["floor_waits"]
    assert report["floor_wait_loop_50ms"]["wakeups_per_s"] > 0
    assert set(report["startup_s"]) == set(ENGINES)
    assert set(report["ratios_ours_over_theirs"]) == {"seed_loop", "sweep"}
    assert report["targets"]
    assert all(isinstance(t["met"], bool) for t in report["targets"])
    assert report["meta"]["preset"] == "smoke"


def test_the_rate_scenario_can_lay_ids_out_in_deadline_order():
    """--rate-ordered 1: ids follow deadlines (shares of one lifetime created
    over time), beside the default random layout, the worst case for pages."""
    import re
    import shutil
    import sqlite3

    done = run_module(
        *("bench", "--smoke", "--scenarios", "rate", "--engines", "daemon"),
        *("--rate-ordered", "1", "--floor-waits", "10", "--keep"),
    )
    assert "ids in deadline order" in done.stdout
    workdir = Path(re.search(r"work directory (\S+);", done.stderr).group(1))
    try:
        (db,) = workdir.glob("*-rate-daemon.sqlite3")
        with sqlite3.connect(db) as conn:
            deadlines = [row[0] for row in conn.execute("SELECT expires_at FROM sharing_share ORDER BY id")]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    assert len(deadlines) > 1
    assert deadlines == sorted(deadlines)


def test_the_cost_probe_expires_everything_and_coalescing_cuts_statements():
    done = run_module(
        *("bench.cost_probe", "--shares", "400", "--seconds", "0.2"),
        *("--coalesce", "0", "0.002", "--json"),
    )
    alone, coalesced = json.loads(done.stdout)
    assert alone["expired"] == coalesced["expired"] == 400
    assert coalesced["statements"] < alone["statements"]
    assert alone["cpu_us_per_expiry"] > 0


def test_the_window_probe_expires_the_early_shares_whatever_the_page():
    done = run_module(
        *("bench.window_probe", "--rows", "3000", "--early", "50", "--early-seconds", "0.5"),
        *("--pages", "100", "100000", "--page-max", "100", "--json"),
    )
    paged, whole = json.loads(done.stdout)
    assert paged["expired"] == whole["expired"] == 50
    assert paged["window_rows"] == whole["window_rows"] == 3050
    # 3,050 rows in pages of 100: the refresh reads the first page, 30 more steps the rest.
    assert paged["steps_while_reading"] >= 30
    assert whole["steps_while_reading"] == 0
