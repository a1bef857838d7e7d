"""The expiry benchmark's target checks on made-up results: a timed result
whose engine was ready only after the first deadline measured its start-up,
so its targets are not met, whatever the figures say."""

import pytest

from bench import derived
from bench.report import targets_part

pytestmark = pytest.mark.bench


def rate_result(*, headroom_s: float, cpu_percent: float, p99_ms: float) -> dict:
    return {
        "rate": {
            "daemon": {
                "headroom_s": headroom_s,
                "cpu_percent": cpu_percent,
                "lateness": {"p99_ms": p99_ms},
            }
        }
    }


def targets(results: dict) -> dict:
    return {t["target"]: t for t in derived.check_targets(results)}


CPU = "10,000/s: CPU <= 50 % of a core"
P99 = "10,000/s: p99 lateness <= 2 ms"


def test_a_ready_engine_is_judged_on_its_figures():
    checks = targets(rate_result(headroom_s=1.0, cpu_percent=40.0, p99_ms=3.0))
    assert checks[CPU]["met"]
    assert checks[CPU]["measured"] == 40.0
    assert checks[CPU]["note"] == ""
    assert not checks[P99]["met"]
    assert checks[P99]["measured"] == 3.0


@pytest.mark.parametrize("headroom_s", [-10.2, 0.0, derived.MIN_HEADROOM_S / 2])
def test_an_engine_ready_too_late_meets_no_target_of_that_scenario(headroom_s):
    # What a slow machine produced: the daemon caught up after start-up, so
    # the CPU over its "window" was 0 % and would have passed.
    checks = targets(rate_result(headroom_s=headroom_s, cpu_percent=0.0, p99_ms=0.5))
    for name in (CPU, P99):
        assert not checks[name]["met"]
        assert checks[name]["measured"] is None
        assert checks[name]["note"].startswith("not measured")


def test_the_report_says_why_a_target_was_not_measured():
    text = targets_part(derived.check_targets(rate_result(headroom_s=-10.2, cpu_percent=0.0, p99_ms=0.5)))
    assert "MISSED (not measured: the engine was ready -10.2 s from the first deadline)" in text
