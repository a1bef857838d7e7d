"""The web benchmark runs end to end at smoke sizes and reports sane figures.

This checks that `python -m bench.web` works (its own database, gunicorn,
wrk, every scenario, the uploads, the bucket pass on moto, JSON written) on the database this pass of
the suite uses, not how fast anything is: targets are judged on full runs
(docs/benchmarks.md, "Web benchmark"). Also here: the floor view exists only in the
benchmark's settings, and the target checks read the figures the right way.
"""

import pytest
from django.test import Client

from bench.tests.running import UNDER_CI, VENDOR, measured_here, run_load_smoke
from bench.web import front
from bench.web import report as web_report
from bench.web.plan import FULL, SMOKE
from bench.web.scenarios import SCENARIOS, ZIP_KEY
from bench.web.upload import zeros_sha256

pytestmark = pytest.mark.bench
# Without nginx the offload scenarios are reported as not measured (CI installs it).
HAVE_NGINX = front.find_nginx() is not None
NOT_BUILT = {s.key for s in SCENARIOS if s.path is None or (s.behind_nginx and not HAVE_NGINX)}
MEASURED = [s.key for s in SCENARIOS if s.key not in NOT_BUILT]


def test_the_floor_view_does_not_exist_in_production(db):
    assert Client().get("/bench/floor").status_code == 404


def test_the_floor_view_answers_ok_in_the_benchmark_urlconf(db, settings):
    settings.ROOT_URLCONF = "bench.web.urls"
    response = Client().get("/bench/floor")
    assert response.status_code == 200
    assert response.content == b"ok"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    if not HAVE_NGINX and UNDER_CI:
        pytest.fail("nginx is required under CI for the offload scenarios (apt-get install -y nginx)")
    out = tmp_path_factory.mktemp("bench-web") / "smoke.json"
    return run_load_smoke("bench.web", out)


@pytest.fixture(scope="module")
def result(run):
    return measured_here(run)


def test_every_built_scenario_ran_at_every_concurrency(run, result):
    connections = [str(c) for c in run["plan"]["connections"]]
    assert connections == [str(c) for c in SMOKE.connections]
    assert set(result["cells"]) == set(MEASURED)
    for key, cells in result["cells"].items():
        assert list(cells) == connections, key
        for c, cell in cells.items():
            assert "error" not in cell, (key, c, cell.get("error"))
            assert cell["failed"] == 0, (key, c, cell["errors"])
            assert cell["requests"] > 0, (key, c)
            assert cell["req_per_s"] > 0, (key, c)
            assert cell["mb_per_s"] > 0, (key, c)
            assert 0 < cell["p50_ms"] <= cell["p99_ms"] <= cell["max_ms"], (key, c)
    assert set(result["not_built"]) == NOT_BUILT


def test_each_answer_carried_at_least_its_file(run, result):
    for size in ("small", "medium", "large"):
        expected = run["plan"][f"{size}_bytes"]
        for key in (f"static_{size}", f"download_{size}"):
            if key not in result["cells"]:
                continue  # download_small is compared by requests/s, but is measured too
            for cell in result["cells"][key].values():
                assert cell["bytes"] / cell["requests"] >= expected, (key, cell)
    # The zip: every file's bytes, and the headers around them.
    zip_bytes = run["plan"]["zip_files"] * run["plan"]["zip_file_bytes"]
    for cell in result["cells"][ZIP_KEY].values():
        assert cell["bytes"] / cell["requests"] >= result["zip_check"]["content_length"] > zip_bytes, cell


def test_the_zip_was_checked_whole_outside_the_cells(run, result):
    check, plan = result["zip_check"], run["plan"]
    assert check["ok"] is True, check.get("problems") or check.get("error")
    assert check["status"] == 200
    assert check["content_type"] == "application/zip"
    assert check["bytes"] == check["content_length"]
    assert check["entries"] == [[f"zip-{n:02d}.bin", plan["zip_file_bytes"]] for n in range(1, plan["zip_files"] + 1)]
    assert check["stored"] is True
    assert check["testzip"] is None
    text = web_report.render(run)
    assert "zip check (one whole all.zip, untimed): " in text
    assert "a valid zip (10 stored entries, testzip() None)" in text
    assert "\nZIP TO SINGLE FILE (same database, same concurrency)\n" in text


def test_every_worker_was_watched(run, result):
    workers = run["plan"]["workers"]
    for key, cells in result["cells"].items():
        for cell in cells.values():
            watched = cell["workers"]
            assert len(watched["rss_before_mb"]) == workers, key
            assert len(watched["peak_rss_mb"]) == workers, key
            assert watched["workers_lost"] == 0, key
            # The peak was reset to the RSS of the moment, so it can only grow.
            assert watched["max_growth_mb"] >= 0, key
            assert all(peak > 10 for peak in watched["peak_rss_mb"]), key


def test_upload_stored_then_deleted_and_over_limit_refused_unread(run, result):
    upload = result["upload"]
    assert upload["status"] == 201
    assert upload["bytes"] == run["plan"]["upload_bytes"]
    assert upload["deleted_status"] == 204
    assert upload["verified"] is True  # the API shows the size and SHA-256 sent
    assert upload["workers"]["max_growth_mb"] >= 0
    probe = result["over_limit"]
    assert probe["status"] == 413
    assert probe["body_bytes_sent"] == 0
    assert probe["refused_before_body"] is True


def test_the_same_file_over_tus_stored_verified_then_deleted(run, result):
    tus, size, chunk = result["tus_upload"], run["plan"]["upload_bytes"], run["plan"]["tus_chunk_bytes"]
    assert "error" not in tus, tus.get("error")
    assert tus["bytes"] == size == result["upload"]["bytes"]
    assert tus["status"] == 204  # the last PATCH's answer
    assert tus["offset"] == size
    assert tus["requests"] == 1 + -(-size // chunk) > 2  # the creation, then every chunk
    assert tus["file_id"]
    assert tus["file_id"] != result["upload"]["file_id"]
    assert tus["stored"] == {"status": 200, "size": size, "sha256": zeros_sha256(size)}
    assert tus["verified"] is True
    assert tus["deleted_status"] == 204
    assert tus["terminated_status"] == 204
    assert tus["mb_per_s"] > 0
    assert 0 <= tus["finish_s"] <= tus["total_s"]
    watched = tus["workers"]
    assert len(watched["peak_rss_mb"]) == run["plan"]["workers"]
    assert watched["workers_lost"] == 0
    assert watched["max_growth_mb"] >= 0


def test_the_uploads_are_printed_side_by_side(run):
    text = web_report.render(run)
    on_disk = [line for line in text.splitlines() if "bucket" not in line]  # the bucket pass has its own rows
    (multipart,) = [line for line in on_disk if "POST /api/files/ (multipart)" in line]
    (tus,) = [line for line in on_disk if "tus /api/uploads/, 5 MiB chunks" in line]
    assert multipart.split()[-1] == tus.split()[-1] == "yes"  # stored as sent
    names = [t["target"] for t in run["targets"]]
    assert any(name.startswith("12 MiB tus upload (5 MiB chunks) >= 80 % of the multipart") for name in names)
    assert any(name.startswith("12 MiB tus upload stored, worker RSS growth < 32 MB") for name in names)


def test_the_bucket_pass_downloaded_and_stored_as_sent(run, result):
    measured, plan = result["bucket"], run["plan"]
    assert "error" not in measured, measured.get("error")
    assert set(measured["cells"]) == {"download_large"}
    cells = measured["cells"]["download_large"]
    for c, cell in cells.items():
        assert cell["failed"] == 0, (c, cell["errors"])
        # A smoke cell lasts 1 s: on a loaded machine the 16 downloads through
        # moto may all still be streaming when it ends (wrk counts none). That
        # is speed, which full runs judge; every one that finished was whole.
        if cell["requests"]:
            assert cell["bytes"] / cell["requests"] >= plan["large_bytes"], (c, cell)
    assert any(cell["requests"] for cell in cells.values()), cells
    for key in ("upload", "tus_upload"):
        assert measured[key]["verified"] is True, key
        assert measured[key]["deleted_status"] == 204, key
    text = web_report.render(run)
    assert "4 MiB from the bucket (moto, same machine)" in text
    assert "\nDISK AND BUCKET (" in text


def test_ratios_and_targets_are_reported(run):
    ratios = run["ratios_to_floor"][VENDOR]
    for key in ("download_small", "download_medium", "download_large", "api_create", "api_list"):
        assert set(ratios[key]) == {str(c) for c in SMOKE.connections}, key
        assert all(value > 0 for value in ratios[key].values()), key
    statuses = {t["target"]: t["status"] for t in run["targets"]}
    assert all(status in {"met", "MISSED", "shown (no target)"} for status in statuses.values()), statuses
    assert sum(status == "shown (no target)" for status in statuses.values()) == 1  # the limited link
    (zipped,) = [name for name in statuses if name.startswith("zip of 10 x 400 KiB (all.zip) at 16 connections")]
    assert statuses[zipped] in {"met", "MISSED"}  # measured; how fast is for full runs
    assert run["meta"]["preset"] == "smoke"
    assert run["meta"]["git_commit"]


# --- the target checks, on made-up figures --------------------------------------


def _cell(req_per_s: float, mb_per_s: float = 1.0, failed: int = 0, growth: float = 1.0) -> dict:
    return {"req_per_s": req_per_s, "mb_per_s": mb_per_s, "failed": failed, "workers": {"max_growth_mb": growth}}


def _targets(**cells) -> dict[str, dict]:
    databases = {"sqlite": {"cells": {key: {"16": cell} for key, cell in cells.items()}}}
    return {t["target"]: t for t in web_report.check_targets(databases, SMOKE)}


def _find(targets: dict, start: str) -> dict:
    (found,) = [t for name, t in targets.items() if name.startswith(start)]
    return found


HOT_LINK_AT_16 = "100 B download, one hot link at 16 connections >= 70 %"
HOT_LINK_TAIL = "100 B download, one hot link at 16 connections: p99 <= 4 x p50"


def test_a_hot_link_at_70_percent_of_the_floor_meets_its_target_and_below_misses_it():
    met = _find(_targets(floor_view=_cell(1000), download_small=_cell(700)), HOT_LINK_AT_16)
    assert met["status"] == "met"
    assert met["measured"] == pytest.approx(70)
    missed = _find(_targets(floor_view=_cell(1000), download_small=_cell(699)), HOT_LINK_AT_16)
    assert missed["status"] == "MISSED"


def test_a_hot_link_is_judged_at_every_planned_concurrency_of_its_target():
    databases = {"sqlite": {"cells": {"floor_view": {}, "download_small": {}}}}
    for c, rate in (("16", 700), ("64", 600)):
        databases["sqlite"]["cells"]["floor_view"][c] = _cell(1000)
        databases["sqlite"]["cells"]["download_small"][c] = _cell(rate)
    full = {t["target"]: t for t in web_report.check_targets(databases, FULL)}
    assert _find(full, HOT_LINK_AT_16)["status"] == "met"
    assert _find(full, "100 B download, one hot link at 64 connections >= 70 %")["status"] == "MISSED"
    smoke = {t["target"]: t for t in web_report.check_targets(databases, SMOKE)}  # plans 1 and 16 only
    assert not [name for name in smoke if "at 64 connections" in name]


def test_a_hot_link_whose_p99_is_within_4_times_its_p50_meets_its_tail_target():
    def tail(p99_ms: float) -> dict:
        cell = {**_cell(700), "p50_ms": 10.0, "p99_ms": p99_ms}
        return _find(_targets(floor_view=_cell(1000), download_small=cell), HOT_LINK_TAIL)

    assert tail(40.0)["status"] == "met"
    assert tail(41.0)["status"] == "MISSED"
    assert tail(41.0)["measured"] == pytest.approx(4.1)
    assert _find(_targets(floor_view=_cell(1000)), HOT_LINK_TAIL)["status"] == "not measured"


def test_a_fast_cell_with_errors_misses_its_target():
    target = _find(_targets(floor_view=_cell(1000), api_create=_cell(900, failed=3)), "POST /api/shares/")
    assert target["status"] == "MISSED"


def test_large_downloads_are_compared_by_throughput_with_whitenoise():
    cells = {"static_large": _cell(10, mb_per_s=1000), "download_large": _cell(1, mb_per_s=600, growth=20)}
    targets = _targets(**cells)
    assert _find(targets, "4 MiB download at")["measured"] == pytest.approx(60)
    assert _find(targets, "4 MiB download at")["status"] == "met"
    assert _find(targets, "worker RSS growth while streaming")["status"] == "MISSED"  # 20 MB >= 16 MB


def test_unmeasured_targets_say_so():
    targets = _targets(floor_view=_cell(1000))
    assert _find(targets, HOT_LINK_AT_16)["status"] == "not measured"
    assert _find(targets, "4 MiB download offloaded")["status"] == "not measured"


def test_an_offloaded_download_is_compared_with_nginx_serving_the_file_itself():
    cells = {"nginx_static_large": _cell(10, mb_per_s=1000), "offload_large": _cell(9, mb_per_s=950)}
    target = _find(_targets(**cells), "4 MiB download offloaded")
    assert target["measured"] == pytest.approx(95)
    assert target["status"] == "met"
    slow = _find(
        _targets(nginx_static_large=_cell(10, mb_per_s=1000), offload_large=_cell(5, mb_per_s=899)),
        "4 MiB download offloaded",
    )
    assert slow["status"] == "MISSED"


def _zip_targets(zip_mb_per_s: float, failed: int = 0, check_ok: bool = True) -> dict[str, dict]:
    cells = {"download_large": {"16": _cell(10, mb_per_s=1000)}, ZIP_KEY: {"16": _cell(10, zip_mb_per_s, failed)}}
    databases = {"sqlite": {"cells": cells, "zip_check": {"ok": check_ok}}}
    return {t["target"]: t for t in web_report.check_targets(databases, SMOKE)}


ZIP_TARGET = "zip of 10 x 400 KiB (all.zip) at 16 connections >= 80 % of the 4 MiB download's MB/s (SQLite)"


def test_a_zip_at_80_percent_of_the_single_file_meets_its_target_and_below_misses_it():
    met = _zip_targets(800)[ZIP_TARGET]
    assert met["measured"] == pytest.approx(80)
    assert met["status"] == "met"
    assert _zip_targets(799)[ZIP_TARGET]["status"] == "MISSED"


def test_a_fast_zip_with_errors_or_wrong_bytes_misses_its_target():
    assert _zip_targets(1000, failed=1)[ZIP_TARGET]["status"] == "MISSED"
    assert _zip_targets(1000, check_ok=False)[ZIP_TARGET]["status"] == "MISSED"


def test_a_zip_without_the_single_file_to_compare_with_is_not_measured():
    cells = {ZIP_KEY: {"16": _cell(10, mb_per_s=1000)}}
    targets = {t["target"]: t for t in web_report.check_targets({"sqlite": {"cells": cells}}, SMOKE)}
    assert targets[ZIP_TARGET]["status"] == "not measured"


def _uploads(multipart_mb_per_s: float, tus_mb_per_s: float, tus_growth: float = 1.0, verified: bool = True) -> dict:
    multipart = {"status": 201, "verified": True, "mb_per_s": multipart_mb_per_s, "workers": {"max_growth_mb": 1.0}}
    tus = {"status": 204, "verified": verified, "mb_per_s": tus_mb_per_s, "workers": {"max_growth_mb": tus_growth}}
    databases = {"sqlite": {"cells": {}, "upload": multipart, "tus_upload": tus}}
    return {t["target"]: t for t in web_report.check_targets(databases, SMOKE)}


def test_a_tus_upload_at_80_percent_of_multipart_meets_its_target_and_below_misses_it():
    met = _find(_uploads(100, 80), "12 MiB tus upload (5 MiB chunks) >= 80 %")
    assert met["measured"] == pytest.approx(80)
    assert met["status"] == "met"
    assert _find(_uploads(100, 79.9), "12 MiB tus upload (5 MiB chunks)")["status"] == "MISSED"


def test_a_tus_upload_growing_a_worker_by_32_mb_misses_its_target():
    assert _find(_uploads(100, 90, tus_growth=31.9), "12 MiB tus upload stored, worker")["status"] == "met"
    assert _find(_uploads(100, 90, tus_growth=32), "12 MiB tus upload stored, worker")["status"] == "MISSED"


def test_a_tus_upload_not_stored_as_sent_is_not_measured():
    targets = _uploads(100, 200, verified=False)
    assert _find(targets, "12 MiB tus upload (5 MiB chunks)")["status"] == "not measured"
    assert _find(targets, "12 MiB tus upload stored, worker")["status"] == "not measured"
