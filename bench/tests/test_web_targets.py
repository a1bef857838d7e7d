"""The web benchmark's hot-link targets on made-up cells (nothing is
timed): each database's share of the floor view served by gunicorn as
`make run` serves it, the stretch aim beside them, and an old run read
again with today's targets."""

import dataclasses

import pytest

from bench.web import report, targets
from bench.web.plan import FULL

pytestmark = pytest.mark.bench


def _cell(req_per_s: float, failed: int = 0) -> dict:
    workers = {"peak_rss_mb": [80.0], "max_growth_mb": 0.0}
    return {
        "req_per_s": req_per_s,
        "mb_per_s": 0.1,
        "failed": failed,
        "p50_ms": 10.0,
        "p99_ms": 30.0,
        "workers": workers,
    }


def _databases(db: str, hot_link: float, failed: int = 0) -> dict:
    cells = {"floor_view": {"16": _cell(1000)}, "download_small": {"16": _cell(hot_link, failed)}}
    return {db: {"cells": cells}}


def _hot_link(db: str, hot_link: float, failed: int = 0) -> dict:
    (found,) = [
        t
        for t in targets.check_targets(_databases(db, hot_link, failed), FULL)
        if t["target"].startswith("100 B download, one hot link at 16 connections >=")
    ]
    return found


@pytest.mark.parametrize(
    ("db", "hot_link", "status"),
    [("sqlite", 699, "MISSED"), ("sqlite", 700, "met"), ("postgresql", 399, "MISSED"), ("postgresql", 400, "met")],
)
def test_each_database_has_its_share_of_the_floor(db, hot_link, status):
    assert _hot_link(db, hot_link)["status"] == status


def test_the_hot_links_yardstick_names_its_server():
    target = _hot_link("sqlite", 700)
    assert "of the floor view's req/s on gunicorn as `make run` serves it" in target["target"]
    assert target["yardstick"] == {
        "scenario": "floor_view",
        "server": targets.YARDSTICK_SERVER,
        "worker_class": "gthread",
        "preload": True,
        "workers": FULL.workers,
        "threads": FULL.threads,
    }


def test_a_fast_hot_link_with_errors_misses_its_target():
    assert _hot_link("sqlite", 900, failed=1)["status"] == "MISSED"


@pytest.mark.parametrize(("hot_link", "status"), [(799, "not reached"), (800, "reached")])
def test_the_stretch_aim_is_a_figure_not_a_target(hot_link, status):
    (stretch,) = targets.hot_link_stretch(_databases("sqlite", hot_link), FULL)[:1]
    assert stretch["status"] == status
    assert stretch["aim"] == pytest.approx(80)
    names = [t["target"] for t in targets.check_targets(_databases("sqlite", hot_link), FULL)]
    assert not [name for name in names if "80 %" in name and "hot link" in name]


def test_an_old_run_is_judged_again_by_todays_targets():
    # A run saved under the old targets: 60 % of the floor, p50 under 5 ms, no stretch.
    old_target = {"target": "hot link >= 60 %", "measured": 65.0, "limit": 60.0, "unit": "%", "met": True}
    saved = {
        "meta": {"date": "then", "nproc": 2, "cpu": "x", "python": "3.11", "load_average": [0, 0, 0], "git_commit": ""},
        "plan": dataclasses.asdict(FULL),
        "databases": _databases("sqlite", 650),
        "ratios_to_floor": {},
        "targets": [old_target],
    }
    again = report.rebuild(saved)
    by_name = {t["target"]: t for t in again["targets"]}
    assert old_target["target"] not in by_name
    assert by_name[_hot_link("sqlite", 650)["target"]]["status"] == "MISSED"
    assert again["yardstick_server"].startswith(targets.YARDSTICK_SERVER)
    text = report.render(again)
    assert "STRETCH AIM (a figure, not a target)" in text
    assert "p99 <= 4 x p50 (SQLite)" in text
