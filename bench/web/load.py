"""The load generator: wrk (Debian's package), one run per cell.

wrk keeps its connections open (HTTP/1.1 keep-alive), as a browser or a
script downloading several links does, and reports from its own histogram;
the Lua script below only sets the method and body and prints the summary as
one JSON line, so no Lua runs per request.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

WRK = os.environ.get("WRK", "wrk")
# A cell whose responses take longer than this counts them as timeouts (a
# 100 MB download at 64 connections takes seconds on 2 cores).
REQUEST_TIMEOUT_S = 60
MARKER = "BENCH_JSON "

# The summary as one JSON line; every script of ours ends with it (the mixed
# benchmark's too, bench/mixed/traffic.py).
DONE = r"""
done = function(summary, latency, requests)
  local e = summary.errors
  local n = summary.requests
  local function p(q) if n > 0 then return latency:percentile(q) else return -1 end end
  io.write(string.format(
    'BENCH_JSON {"requests": %d, "bytes": %d, "duration_us": %d, ' ..
    '"errors": {"connect": %d, "read": %d, "write": %d, "status": %d, "timeout": %d}, ' ..
    '"latency_us": {"p50": %.1f, "p99": %.1f, "max": %.1f}}\n',
    n, summary.bytes, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    p(50), p(99), latency.max))
end
"""
SCRIPT = (
    r"""
wrk.method = os.getenv("BENCH_METHOD") or "GET"
local body = os.getenv("BENCH_BODY")
if body and body ~= "" then wrk.body = body end
"""
    + DONE
)


def find_wrk() -> str:
    path = shutil.which(WRK)
    if path is None:
        raise SystemExit(
            f"wrk not found ({WRK!r}): install it with `apt-get install -y wrk` "
            "(`make bench-web` does when run as root), or set WRK to its path."
        )
    return path


def version(wrk: str) -> str:
    done = subprocess.run([wrk, "--version"], capture_output=True, text=True, timeout=10)
    text = (done.stdout or done.stderr).strip()
    # "wrk debian/4.1.0-3+b2 [epoll] Copyright ...": the name and version.
    return " ".join(text.split()[:2]) if text else "wrk (unknown version)"


def write_script(workdir: Path) -> Path:
    path = workdir / "bench.lua"
    path.write_text(SCRIPT)
    return path


def run(
    wrk: str,
    script: Path,
    url: str,
    *,
    connections: int,
    seconds: int,
    method: str = "GET",
    body: str = "",
    headers: dict[str, str] | None = None,
) -> dict:
    """Load `url` for `seconds` at `connections`; return wrk's figures and ours."""
    env = {"BENCH_METHOD": method, "BENCH_BODY": body}
    return run_script(wrk, script, url, connections=connections, seconds=seconds, env=env, headers=headers)


def run_script(
    wrk: str,
    script: Path,
    url: str,
    *,
    connections: int,
    seconds: int,
    env: dict[str, str],
    headers: dict[str, str] | None = None,
) -> dict:
    """Run wrk with `script` (ending with DONE), the variables `env` added to
    its environment; return wrk's figures and ours."""
    threads = min(connections, 2)  # wrk needs far less CPU than the server; one thread per core at most
    command = [wrk, "-t", str(threads), "-c", str(connections), "-d", f"{seconds}s"]
    command += ["--timeout", f"{REQUEST_TIMEOUT_S}s", "-s", str(script)]
    for name, value in (headers or {}).items():
        command += ["-H", f"{name}: {value}"]
    env = {**os.environ, **env}
    try:
        done = subprocess.run(
            [*command, url], capture_output=True, text=True, env=env, timeout=seconds + REQUEST_TIMEOUT_S + 30
        )
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"wrk did not finish within {seconds + REQUEST_TIMEOUT_S + 30} s") from None
    lines = [line for line in done.stdout.splitlines() if line.startswith(MARKER)]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"wrk failed ({done.returncode}): {(done.stderr or done.stdout).strip()[:500]}")
    return figures(json.loads(lines[-1][len(MARKER) :]), connections)


def figures(raw: dict, connections: int) -> dict:
    seconds = raw["duration_us"] / 1e6
    latency = raw["latency_us"]
    answered = raw["requests"] > 0
    errors = raw["errors"]
    return {
        "connections": connections,
        "requests": raw["requests"],
        "seconds": round(seconds, 3),
        "bytes": raw["bytes"],
        "req_per_s": raw["requests"] / seconds if seconds else None,
        # Bytes read, headers included, partly read bodies too: the stream's rate.
        "mb_per_s": raw["bytes"] / seconds / 1e6 if seconds else None,
        "p50_ms": latency["p50"] / 1000 if answered else None,
        "p99_ms": latency["p99"] / 1000 if answered else None,
        "max_ms": latency["max"] / 1000 if answered else None,
        # status: responses >= 400; the others are socket errors and timeouts.
        "errors": errors,
        "failed": sum(errors.values()),
    }
