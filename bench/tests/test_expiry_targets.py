"""The expiry benchmark's target checks on made-up results (nothing is
timed): limits set from the same run's floors, and a timed result whose
engine was ready only after the first deadline, which measured its
start-up, so its targets are not measured, whatever the figures say."""

import pytest

from bench import derived
from bench.report import targets_part

pytestmark = pytest.mark.bench

ROWS = 100_000


def sweep_burst(*, stamp_s: float = 0.3, seen_s: float = 0.9, cpu_s: float | None = 0.5, expired: int = ROWS):
    """The sweep's one UPDATE: stamped `stamp_s` after the deadline, seen done at `seen_s`."""
    result = {"drained": True, "drain_s": stamp_s, "observed_drain_s": seen_s, "expired": expired}
    return result if cpu_s is None else {**result, "cpu_s": cpu_s}


def daemon_burst(drain_s: float, *, history_rows: int | None = ROWS) -> dict:
    result = {"drained": True, "drain_s": drain_s, "observed_drain_s": drain_s, "expired": ROWS, "headroom_s": 1.0}
    return result if history_rows is None else {**result, "history_rows": history_rows}


def rate_result(*, headroom_s: float = 1.0, cpu_s: float = 0.4, p99_ms: float = 1.0, sweep: dict | None = None):
    daemon = {"headroom_s": headroom_s, "cpu_s": cpu_s, "expired": ROWS, "lateness": {"p99_ms": p99_ms}}
    results = {"rate": {"daemon": daemon}}
    if sweep is not None:
        results["burst"] = {"sweep": sweep}
    return results


def targets(results: dict, floor: dict | None = None) -> dict:
    return {t["target"]: t for t in derived.check_targets(results, floor)}


P99 = "10,000/s: p99 lateness <= 2 ms"


@pytest.mark.parametrize(("p99_ms", "status"), [(1.8, "met"), (1.81, "MISSED")])
def test_the_spread_is_judged_against_the_timer_floor_of_the_same_run(p99_ms, status):
    spread = {"spread": {"daemon": {"headroom_s": 1.0, "lateness": {"p99_ms": p99_ms, "p999_ms": 3.0}}}}
    check = targets(spread, {"p99_ms": 1.3})[derived.SPREAD_P99]
    assert check["limit"] == pytest.approx(1.8)
    assert check["status"] == status


def test_a_spread_without_its_timer_floor_is_not_measured():
    spread = {"spread": {"daemon": {"headroom_s": 1.0, "lateness": {"p99_ms": 0.1, "p999_ms": 3.0}}}}
    assert targets(spread)[derived.SPREAD_P99]["status"] == "not measured"


@pytest.mark.parametrize(("drain_s", "status"), [(1.2, "met"), (1.21, "MISSED")])
def test_a_burst_is_judged_against_twice_the_bare_update_of_the_same_rows(drain_s, status):
    # The UPDATE ran from its stamp at 0.3 s to 0.9 s: 0.6 s, so the limit is 1.2 s.
    check = targets({"burst": {"daemon": daemon_burst(drain_s), "sweep": sweep_burst()}})[derived.BURST_DRAIN]
    assert check["limit"] == pytest.approx(1.2)
    assert check["status"] == status


def test_a_fast_burst_that_skipped_the_history_misses_its_target():
    burst = {"daemon": daemon_burst(0.1, history_rows=ROWS - 1), "sweep": sweep_burst()}
    check = targets({"burst": burst})[derived.BURST_DRAIN]
    assert check["status"] == "MISSED"
    assert check["note"] == f"{ROWS - 1} history rows for {ROWS} expired"


def test_a_burst_saved_before_history_rows_were_counted_is_judged_on_its_drain():
    burst = {"daemon": daemon_burst(0.1, history_rows=None), "sweep": sweep_burst()}
    assert targets({"burst": burst})[derived.BURST_DRAIN]["status"] == "met"


def test_a_burst_without_the_sweep_engine_is_not_measured():
    check = targets({"burst": {"daemon": daemon_burst(0.1)}})[derived.BURST_DRAIN]
    assert check["status"] == "not measured"
    assert check["note"] == derived.NO_SWEEP


@pytest.mark.parametrize(("cpu_s", "status"), [(1.0, "met"), (1.01, "MISSED")])
def test_cpu_at_rate_is_judged_against_twice_the_bare_updates_cpu(cpu_s, status):
    check = targets(rate_result(cpu_s=cpu_s, sweep=sweep_burst(cpu_s=0.5)))[derived.RATE_CPU]
    assert check["limit"] == pytest.approx(1.0)
    assert check["status"] == status


def test_cpu_at_rate_is_compared_per_row():
    # The bare UPDATE's 0.5 s was for half the rows: 1 s for the rate's, 2 s allowed.
    check = targets(rate_result(cpu_s=1.9, sweep=sweep_burst(cpu_s=0.5, expired=ROWS // 2)))[derived.RATE_CPU]
    assert check["limit"] == pytest.approx(2.0)
    assert check["status"] == "met"


def test_cpu_at_rate_without_the_bare_updates_cpu_says_why_it_is_not_measured():
    # What a run saved before the sweep's CPU was measured re-derives to.
    check = targets(rate_result(sweep=sweep_burst(cpu_s=None)))[derived.RATE_CPU]
    assert check["status"] == "not measured"
    assert "not measured (the bare UPDATE's CPU was not measured in this run)" in targets_part([check])


def test_a_ready_engine_is_judged_on_its_figures():
    checks = targets(rate_result(p99_ms=3.0, sweep=sweep_burst()))
    assert checks[derived.RATE_CPU]["status"] == "met"
    assert checks[derived.RATE_CPU]["measured"] == 0.4
    assert checks[derived.RATE_CPU]["note"] == ""
    assert checks[P99]["status"] == "MISSED"
    assert checks[P99]["measured"] == 3.0


@pytest.mark.parametrize("headroom_s", [-10.2, 0.0, derived.MIN_HEADROOM_S / 2])
def test_an_engine_ready_too_late_meets_no_target_of_that_scenario(headroom_s):
    # What a slow machine produced: the daemon caught up after start-up, so
    # the CPU over its "window" was nil and would have passed.
    checks = targets(rate_result(headroom_s=headroom_s, cpu_s=0.0, p99_ms=0.5, sweep=sweep_burst()))
    for name in (derived.RATE_CPU, P99):
        assert not checks[name]["met"]
        assert checks[name]["measured"] is None
        assert checks[name]["status"] == "not measured"


def test_the_report_says_why_a_target_was_not_measured():
    text = targets_part(derived.check_targets(rate_result(headroom_s=-10.2, cpu_s=0.0, p99_ms=0.5)))
    assert "not measured (the engine was ready -10.2 s from the first deadline)" in text
