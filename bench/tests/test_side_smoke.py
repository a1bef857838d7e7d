"""`python -m bench.side_by_side` runs end to end at smoke size: the service as
`make run` starts it, every figure of the comparison measured once and
plausible. Speeds are only checked to be there; the exact ones (one copy of
a one-download link, no link served after its expiry) must hold at any size."""

import json
import os

import pytest

from bench.side_report import FIGURES
from bench.tests.running import VENDOR, require_wrk, run_module

pytestmark = pytest.mark.bench
RACERS = 5
EXPIRING = 3
LARGE_BYTES = 4 << 20


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    require_wrk()
    out = tmp_path_factory.mktemp("bench-side") / "side.json"
    command = ["bench.side_by_side", "--seconds", "1", "--runs", "1", "--expiring", str(EXPIRING)]
    command += ["--racers", str(RACERS), "--large-mb", str(LARGE_BYTES >> 20), "--database", VENDOR]
    if VENDOR == "postgresql":
        command += ["--pg-url", os.environ["DATABASE_URL"]]  # the server; the bench makes its own database
    done = run_module(*command, "--json", str(out), timeout=120)
    result = json.loads(out.read_text())
    (figures,) = result["runs"]
    return done.stdout, figures


def test_every_figure_is_measured_and_printed(run):
    stdout, figures = run
    assert "errors" not in figures, figures["errors"]
    for key, *_ in FIGURES:
        assert figures[key] is not None, key
    for label in ("hot 100 B link, successful downloads", "4 MiB download", "link refused after its expiry"):
        (line,) = [line for line in stdout.splitlines() if line.startswith(label)]
        assert line.split()[-1] != "-", line
    assert "python -m bench.idle" in stdout


def test_the_hot_link_served_its_file(run):
    _, figures = run
    hot = figures["hot"]
    assert figures["hot_ok_per_s"] > 0
    assert hot["non_2xx"] == 0, hot
    assert hot["socket_errors"] == 0, hot
    assert hot["bytes_per_response"] > 100  # the file and its headers
    assert 0 < figures["hot_p50_ms"] <= figures["hot_p99_ms"]


def test_the_large_file_went_both_ways(run):
    _, figures = run
    assert figures["download_mb_per_s"] > 0
    assert figures["upload_s"] > 0


def test_every_expiring_link_was_refused_soon_after_its_expiry_and_not_before(run):
    _, figures = run
    expiry = figures["expiry"]
    assert len(expiry["after_ms"]) == EXPIRING
    assert expiry["never_refused"] == 0
    assert expiry["refused_before_expiry"] == 0
    assert expiry["served_after_expiry"] == 0
    assert expiry["statuses"] == [410]
    assert 0 <= figures["refused_after_ms"] < 500


@pytest.mark.parametrize("key", ["small", "large"])
def test_a_one_download_link_served_exactly_one_copy_to_racing_clients(run, key):
    _, figures = run
    race = figures[f"race_{key}"]
    assert figures[f"copies_{key}"] == 1, race
    assert race["partial_200s"] == 0, race
    assert sum(race["statuses"].values()) == RACERS
    assert set(race["statuses"]) <= {"200", "410"}, race
