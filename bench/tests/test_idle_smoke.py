"""`python -m bench.idle` runs end to end for a couple of seconds: it starts
the service as `make run` does, finds every process, and reports each target.
No figure is judged here (docs/benchmarks.md, "Idle cost")."""

import json

import pytest

from bench.tests.running import VENDOR, run_module

pytestmark = pytest.mark.bench


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench-idle") / "idle.json"
    done = run_module("bench.idle", "--seconds", "2", "--settle", "1", "--database", VENDOR, "--json", str(out))
    return done.stdout, json.loads(out.read_text())


def test_every_process_role_is_named(run):
    stdout, result = run
    roles = [p["role"] for p in result["measured"]["processes"]]
    assert roles.count("gunicorn master") == 1
    assert roles.count("runexpiry") == 1
    workers = int(result["meta"]["command"].split("--workers ")[1].split()[0])
    assert sorted(r for r in roles if r.startswith("gunicorn worker")) == sorted(
        f"gunicorn worker {n}" for n in range(1, workers + 1)
    )
    for role in roles:
        assert role in stdout
    assert all(p["pss"] > 0 for p in result["measured"]["processes"])


def test_every_target_is_reported(run):
    stdout, result = run
    assert "\nTARGETS\n" in stdout
    for name in ("idle CPU", "wake-ups", "idle PSS"):
        (line,) = [line for line in stdout.splitlines() if line.startswith(name)]
        assert line.endswith(("met", "MISSED")), line
    assert len(result["targets"]) == 3
