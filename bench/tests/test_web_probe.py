"""bench.web_probe at a tiny size, on this run's database: both paths answer
200 through the whole application and their costs come out."""

import json
import os

from bench.tests.running import VENDOR, run_module


def test_the_web_probe_times_the_floor_and_a_download():
    command = ["bench.web_probe", "--database", VENDOR, "--requests", "20", "--rounds", "2", "--json"]
    if VENDOR == "postgresql":
        command += ["--pg-url", os.environ["DATABASE_URL"]]  # the server; the probe makes its own database
    done = run_module(*command)
    report = json.loads(done.stdout)
    assert report["database"] == VENDOR
    assert len(report["rounds"]) == 2
    for figures in report["rounds"]:
        assert 0 < figures["floor_cpu_us"] <= figures["floor_wall_us"] * 1.5
        # A download looks the link up, records itself and opens the file: never cheaper than "ok".
        assert figures["download_cpu_us"] > figures["floor_cpu_us"]
