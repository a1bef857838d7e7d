"""The web server as `make run` starts it (deploy/web_servers.py), and its
workers' memory read from /proc.

Peak RSS per cell: writing "5" to /proc/<pid>/clear_refs resets a process's
VmHWM (peak RSS) to its current RSS (Linux >= 4.0), so each cell's peak is
its own, not the worker's lifetime peak.
"""

import contextlib
import ctypes
import importlib.metadata
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bench.db import REPO_ROOT
from bench.idle_procs import children
from deploy.web_servers import WebServer

START_TIMEOUT_S = 60.0
PR_SET_PDEATHSIG = 1  # linux/prctl.h
STOP_TIMEOUT_S = 15.0


def version(server: str) -> str:
    return importlib.metadata.version(server)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _status(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/status") as f:
        return dict(line.split(":", 1) for line in f if ":" in line)


def _kb(value: str) -> int:
    return int(value.split()[0])


@dataclass
class Server:
    process: subprocess.Popen
    port: int
    workers: int
    log: Path
    ready_s: float | None = None  # start to every worker up and answering

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def worker_pids(self) -> list[int]:
        return children(self.process.pid)

    def reset_peaks(self) -> dict[int, int]:
        """Reset every worker's peak RSS; return each one's current RSS in kB."""
        now = {}
        for pid in self.worker_pids():
            with contextlib.suppress(OSError):
                with open(f"/proc/{pid}/clear_refs", "w") as f:
                    f.write("5")
                now[pid] = _kb(_status(pid)["VmRSS"])
        return now

    def peaks(self, before: dict[int, int]) -> dict:
        """Each worker's peak RSS since reset_peaks(), and the largest growth."""
        peak_kb = {}
        for pid in before:
            with contextlib.suppress(OSError, KeyError):
                peak_kb[pid] = _kb(_status(pid)["VmHWM"])
        growth = [peak_kb[pid] - before[pid] for pid in peak_kb]
        return {
            "rss_before_mb": [round(before[pid] / 1024, 1) for pid in sorted(before)],
            "peak_rss_mb": [round(peak_kb[pid] / 1024, 1) for pid in sorted(peak_kb)],
            "max_growth_mb": round(max(growth) / 1024, 2) if growth else None,
            # A worker that died (and was replaced) during the cell.
            "workers_lost": len(before) - len(peak_kb),
        }

    def wait_ready(self, probe_path: str) -> float:
        """Wait until every worker is up and `probe_path` answers 200; return seconds."""
        started = time.monotonic()
        deadline = started + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the web server exited ({self.process.returncode}):\n{self.tail()}")
            if len(self.worker_pids()) >= self.workers:
                try:
                    with urllib.request.urlopen(self.base_url + probe_path, timeout=5) as response:
                        if response.status == 200:
                            return time.monotonic() - started
                except (OSError, urllib.error.URLError):
                    pass
            time.sleep(0.1)
        raise RuntimeError(f"the web server not ready after {START_TIMEOUT_S:g} s:\n{self.tail()}")

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


@dataclass
class Proxied:
    """nginx in front of a web Server: requests go to nginx, worker memory
    is read from the server's workers."""

    upstream: Server
    port: int

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def reset_peaks(self) -> dict[int, int]:
        return self.upstream.reset_peaks()

    def peaks(self, before: dict[int, int]) -> dict:
        return self.upstream.peaks(before)


@contextlib.contextmanager
def web_server(
    env: dict[str, str], log: Path, *, workers: int, threads: int, probe_path: str, server: str = "gunicorn"
) -> Iterator[Server]:
    """Run the web server until the block ends; stop it (SIGTERM, then SIGKILL) whatever happens."""
    port = free_port()
    with open(log, "ab") as sink:
        process = subprocess.Popen(
            WebServer(server, port=port, workers=workers, threads=threads).command(),
            cwd=REPO_ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            # Its own process group, stopped as one by us (not by the terminal's
            # Ctrl-C, which reaches us and runs the finally below).
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
    server = Server(process, port, workers, log)
    try:
        server.ready_s = server.wait_ready(probe_path)
        yield server
    finally:
        stop(process)


def die_with_parent() -> None:
    """In the child: SIGTERM when the benchmark dies, even by SIGKILL, so no
    server outlives it (Linux only)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(STOP_TIMEOUT_S)
