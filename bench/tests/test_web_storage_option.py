"""--storage of the web benchmark: what each choice runs, what the bucket
pass hands the app, and how its rows are printed beside the disk's. No
server, no network: the smoke run (test_web_smoke.py) runs the real thing."""

import dataclasses

import pytest

from bench.web import __main__ as cli
from bench.web import bucket
from bench.web import report as web_report
from bench.web.plan import SMOKE
from storage.url import BUCKET_BACKEND, storage_from_url

pytestmark = pytest.mark.bench


def test_by_default_both_storages_run_and_the_bucket_only_where_bytes_move():
    assert cli.storages(cli.parse_args([])) == (True, ["download_large", "uploads"])


def test_the_bucket_pass_runs_only_the_chosen_scenarios_it_knows():
    args = cli.parse_args(["--storage", "bucket", "--scenarios", "floor_view,download_large"])
    assert cli.storages(args) == (False, ["download_large"])
    args = cli.parse_args(["--storage", "disk,bucket", "--scenarios", "floor_view,api_list"])
    assert cli.storages(args) == (True, [])  # nothing for the bucket to measure: no moto started


def test_disk_only_has_no_bucket_pass():
    assert cli.storages(cli.parse_args(["--storage", "disk"])) == (True, [])


def test_an_unknown_storage_is_refused(capsys):
    with pytest.raises(SystemExit):
        cli.parse_args(["--storage", "disk,s3"])
    assert "unknown storage: s3" in capsys.readouterr().err


def test_help_explains_the_option(capsys):
    with pytest.raises(SystemExit):
        cli.parse_args(["--help"])
    text = capsys.readouterr().out
    assert "--storage" in text
    assert "moto" in text
    assert "not a real bucket's throughput" in text


def test_the_bucket_pass_points_the_app_at_its_bucket():
    store = bucket.Bucket("http://127.0.0.1:9", "bench-web-abc")
    env = store.env()
    assert set(env) == {"STORAGE_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}
    entry = storage_from_url(env["STORAGE_URL"])
    assert entry["BACKEND"] == BUCKET_BACKEND
    assert entry["OPTIONS"] == {
        "bucket_name": "bench-web-abc",
        "location": bucket.PREFIX,
        "endpoint_url": "http://127.0.0.1:9",
        "region_name": bucket.REGION,
        "addressing_style": "path",
    }


def test_without_moto_the_bucket_pass_says_so(monkeypatch, tmp_path):
    monkeypatch.setattr(bucket, "find_moto", lambda: None)
    args = cli.parse_args(["--databases", "sqlite"])
    result = cli.run_bucket("sqlite", args, SMOKE, tmp_path, {}, tmp_path, "wrk", None, ["uploads"], print)
    assert result == {
        "error": "moto_server is not installed (moto[server] is in requirements-dev.txt: make install-dev)"
    }


# --- the rows, on made-up figures --------------------------------------------------


def _measured(download_mb_per_s: float, upload_mb_per_s: float, failed: int = 0) -> dict:
    cell = {
        "connections": 16,
        "req_per_s": 1.0,
        "p50_ms": 1.0,
        "p99_ms": 2.0,
        "mb_per_s": download_mb_per_s,
        "failed": failed,
        "workers": {"peak_rss_mb": [80.0], "max_growth_mb": 1.0},
    }
    upload = {"status": 201, "verified": True, "mb_per_s": upload_mb_per_s, "total_s": 1.0, "send_s": 0.5}
    upload["workers"] = {"max_growth_mb": 2.0}
    return {"cells": {"download_large": {"16": cell}}, "upload": upload}


def test_bucket_rows_are_printed_beside_the_disk_and_judged_by_no_target():
    plan = dataclasses.replace(SMOKE, connections=(16,))
    disk = {"version": "3.40.1", **_measured(1000, 200)}
    disk["bucket"] = {"version": "3.40.1", "moto": "5.2.5", **_measured(400, 50)}
    databases = {"sqlite": disk}
    meta = {
        "date": "now",
        "nproc": 2,
        "cpu": "cpu",
        "python": "3.11",
        "load_average": [1.0, 1.0, 1.0],
        "git_commit": "abc",
    }
    built = web_report.build(meta, dataclasses.asdict(plan), databases)
    text = web_report.render(built)
    assert "GET /s/<token>, 4 MiB from the bucket (moto, same machine)" in text
    assert "POST /api/files/ (multipart) into the bucket (moto, same machine)" in text
    (row,) = [line for line in text.splitlines() if line.startswith("4 MiB download @16")]
    assert row.split()[-4:] == ["1,000", "400", "40", "%"]
    (row,) = [line for line in text.splitlines() if line.startswith("12 MiB upload, multipart")]
    assert row.split()[-4:] == ["200", "50", "25", "%"]
    assert not any("bucket" in t["target"] for t in built["targets"])


def test_a_bucket_cell_with_errors_shows_no_figure():
    figures = web_report.storage_figures(_measured(400, 50, failed=2), SMOKE)
    assert figures["4 MiB download @16"] is None
    assert figures["12 MiB upload, multipart"] == 50
