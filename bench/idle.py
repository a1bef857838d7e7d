"""The idle cost of the whole service, as `make run` starts it.

    .venv/bin/python -m bench.idle                 # SQLite, 10 s to settle, 60 s measured
    .venv/bin/python -m bench.idle --seconds 10 --settle 3
    .venv/bin/python -m bench.idle --database postgresql   # or DATABASE_URL=postgres://...

Starts the web server with `make run`'s own command line
(deploy/web_servers.py: gunicorn, or granian with --server granian) and
`manage.py runexpiry` beside it, each in a session of its own as `make run`
does, on a temporary database (a SQLite file, or a PostgreSQL database
created and dropped on --pg-url) and a temporary var directory (static
files, rate counters, mail), so a developer's var/ is never touched. Once
both are up (every worker answers, the daemon has logged its start) and
have settled, it reads every process of the service (the two started and
everything below them) from /proc, again after --seconds, and prints a
table per process, the totals, and each target as met or missed. It sends
no request during the window. Exit status 0 whether targets are met or not:
it is a benchmark, not a test.

Targets (the product's performance plan): the whole service at most 0.02 %
of one core, at most one wake-up a second per process, at most 120 MB of
PSS summed over its processes (web server and daemon).
"""

import argparse
import contextlib
import json
import os
import platform
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from bench import idle_procs
from bench.db import REPO_ROOT
from bench.web import server
from bench.web.database import DEFAULT_PG_URL, DROPPED_ENV, postgres_database
from deploy.web_servers import SERVERS, WebServer

CPU_LIMIT_PERCENT = 0.02
WAKEUP_LIMIT_PER_S = 1.0
PSS_LIMIT_MB = 120.0
START_TIMEOUT_S = 60.0
# What the web server's first process is called in its own logs.
MAIN_PROCESS = {"gunicorn": "master", "granian": "main"}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.idle", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="measured window (default 60)")
    parser.add_argument("--settle", type=float, default=10.0, help="wait after start-up before measuring (10)")
    default_db = "postgresql" if os.environ.get("DATABASE_URL", "").startswith("postgres") else "sqlite"
    parser.add_argument("--database", choices=("sqlite", "postgresql"), default=default_db)
    parser.add_argument(
        "--pg-url",
        default=os.environ.get("DATABASE_URL", "") if default_db == "postgresql" else DEFAULT_PG_URL,
        help="PostgreSQL server; the benchmark makes (and drops) a database of its own there",
    )
    parser.add_argument("--server", choices=SERVERS, default="gunicorn", help="the web server (default gunicorn)")
    parser.add_argument("--workers", type=int, help="WEB_WORKERS (default: the server's rule, as make run's)")
    parser.add_argument("--threads", type=int, help="WEB_THREADS (default: make run's)")
    parser.add_argument(
        "--warm", type=int, default=0, help="send this many requests (GET /, the log-in page) before settling (0)"
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs)")
    return parser.parse_args(argv)


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- the service, as make run starts it ---------------------------------------


def web_command(name: str, port: int, workers: int | None, threads: int | None) -> list[str]:
    """The web server's command line as `make run` makes it, on our port."""
    return WebServer(name, port=port, workers=workers, threads=threads or WebServer.threads).command()


def service_env(workdir: Path, database_url: str) -> dict[str, str]:
    """make run's environment, pointed at the work directory."""
    env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV}
    env = {k: v for k, v in env.items() if not k.startswith(("EXPIRY_", "WEBHOOK_", "SECRET_KEY"))}
    env.update(
        DATABASE_URL=database_url,
        SECRET_KEY=secrets.token_urlsafe(50),
        STATIC_ROOT=str(workdir / "static"),
        MEDIA_ROOT=str(workdir / "media"),
        RATELIMIT_SQLITE_PATH=str(workdir / "ratelimit.sqlite3"),
        EMAIL_FILE_PATH=str(workdir / "mail"),
    )
    return env


def prepare(env: dict[str, str]) -> None:
    """make migrate: migrate and collect the static files."""
    for command in (["migrate", "--noinput"], ["collectstatic", "--noinput", "--verbosity", "0"]):
        subprocess.run(
            [sys.executable, "manage.py", *command],
            cwd=REPO_ROOT,
            env=env,
            check=True,
            capture_output=True,
            timeout=300,
        )


def spawn(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with open(log, "ab") as sink:
        return subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # make run's setsid
            preexec_fn=server.die_with_parent,
            umask=0o077,
        )


def stop(processes: list[subprocess.Popen]) -> None:
    """As make run's trap: SIGTERM to both, wait; SIGKILL to the group after 15 s."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(server.STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def tail(log: Path, chars: int = 2000) -> str:
    with contextlib.suppress(OSError):
        return log.read_text(errors="replace")[-chars:]
    return ""


def wait_up(web: subprocess.Popen, daemon: subprocess.Popen, port: int, workers: int, logs: dict[str, Path]) -> float:
    """Until every worker is forked and the port answers, and runexpiry logged its start."""
    started = time.monotonic()
    web_up = daemon_up = False
    while time.monotonic() - started < START_TIMEOUT_S:
        for name, process in (("web", web), ("runexpiry", daemon)):
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited ({process.returncode}):\n{tail(logs[name])}")
        # Up: every worker forked and the port taken. No request is sent: a
        # worker's first request imports the views and templates (~30 MB),
        # which --warm measures on purpose.
        if not web_up and len(idle_procs.children(web.pid)) >= workers:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=5):
                web_up = True
        daemon_up = daemon_up or "runexpiry started" in tail(logs["runexpiry"], 100_000)
        if web_up and daemon_up:
            return time.monotonic() - started
        time.sleep(0.1)
    raise RuntimeError(f"the service was not up after {START_TIMEOUT_S:g} s:\n{tail(logs['web'])}")


def warm(port: int, requests: int) -> None:
    """Serve `requests` page loads, as a service that has been used once is."""
    for _ in range(requests):
        with (
            contextlib.suppress(urllib.error.HTTPError),
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10),
        ):
            pass


# --- measuring -----------------------------------------------------------------


def roles(web_pid: int, daemon_pid: int, server_name: str = "gunicorn") -> dict[int, str]:
    """Every process of the service, by role."""
    found = {web_pid: f"{server_name} {MAIN_PROCESS[server_name]}", daemon_pid: "runexpiry"}
    for n, pid in enumerate(idle_procs.children(web_pid), 1):
        found[pid] = f"{server_name} worker {n}"
    for root in (web_pid, daemon_pid):
        for pid in idle_procs.descendants(root):
            found.setdefault(pid, f"child of {found.get(root, root)}")
    return found


def measure(web_pid: int, daemon_pid: int, seconds: float, server_name: str = "gunicorn") -> dict:
    before_roles = roles(web_pid, daemon_pid, server_name)
    before = {pid: idle_procs.sample(pid) for pid in before_roles}
    started = time.monotonic()
    time.sleep(seconds)
    after_roles = roles(web_pid, daemon_pid, server_name)
    after = {pid: idle_procs.sample(pid) for pid in after_roles}
    elapsed = time.monotonic() - started
    processes = []
    for pid, role in after_roles.items():
        figures = idle_procs.delta(before.get(pid, idle_procs.Sample(0.0)), after[pid], elapsed)
        figures.update(pid=pid, role=role, new=pid not in before, **idle_procs.memory_kb(pid))
        processes.append(figures)
    return {"seconds": elapsed, "processes": processes, "ended": sorted(set(before) - set(after))}


def totals(measured: dict) -> dict:
    processes = measured["processes"]
    return {
        "cpu_percent": sum(p["cpu_percent"] for p in processes),
        "cpu_ticks_percent": sum(p["cpu_ticks_percent"] for p in processes),
        "wakeups_per_s": sum(p["wakeups_per_s"] for p in processes),
        "max_wakeups_per_s": max(p["wakeups_per_s"] for p in processes),
        "pss_mb": sum(p["pss"] for p in processes) / 1024,
        "rss_mb": sum(p["rss"] for p in processes) / 1024,
    }


def targets(total: dict) -> list[dict]:
    def judged(name, measured, limit, unit):
        met = measured <= limit
        return {"target": name, "measured": measured, "limit": limit, "unit": unit, "met": met, "status": _status(met)}

    return [
        judged("idle CPU, whole service <= 0.02 % of one core", total["cpu_percent"], CPU_LIMIT_PERCENT, "%"),
        judged(
            "wake-ups <= 1 a second per process (the busiest)", total["max_wakeups_per_s"], WAKEUP_LIMIT_PER_S, "/s"
        ),
        judged(
            f"idle PSS, summed over the service (web server and daemon) <= {PSS_LIMIT_MB:g} MB",
            total["pss_mb"],
            PSS_LIMIT_MB,
            "MB",
        ),
    ]


def _status(met: bool) -> str:
    return "met" if met else "MISSED"


def render(result: dict) -> str:
    meta, measured, total = result["meta"], result["measured"], result["totals"]
    lines = [
        f"Idle benchmark, {meta['date']}: {meta['cpus']} CPUs, Python {meta['python']}, {meta['database']}, "
        f"load average at start {meta['load_average']}",
        f"{meta.get('server', 'gunicorn')}: {meta.get('command') or meta['gunicorn']}",
        f"up in {meta['up_s']:.1f} s, {meta['warm_requests']} warm-up requests, settled {meta['settle_s']:g} s, "
        f"measured {measured['seconds']:.1f} s",
        "",
        f"{'process':<20} {'pid':>7} {'CPU %':>8} {'CPU % ticks':>11} {'CPU ms':>8} {'wake-ups/s':>10} "
        f"{'threads':>7} {'PSS MB':>7} {'RSS MB':>7}",
        f"{'-' * 20} {'-' * 7} {'-' * 8} {'-' * 11} {'-' * 8} {'-' * 10} {'-' * 7} {'-' * 7} {'-' * 7}",
    ]
    for p in measured["processes"]:
        lines.append(
            f"{p['role']:<20} {p['pid']:>7} {p['cpu_percent']:>8.4f} {p['cpu_ticks_percent']:>11.3f} "
            f"{p['cpu_ms']:>8.2f} {p['wakeups_per_s']:>10.2f} {len(p['threads']):>7} "
            f"{p['pss'] / 1024:>7.1f} {p['rss'] / 1024:>7.1f}"
        )
    lines.append(
        f"{'total':<20} {'':>7} {total['cpu_percent']:>8.4f} {total['cpu_ticks_percent']:>11.3f} "
        f"{sum(p['cpu_ms'] for p in measured['processes']):>8.2f} {total['wakeups_per_s']:>10.2f} "
        f"{'':>7} {total['pss_mb']:>7.1f} {total['rss_mb']:>7.1f}"
    )
    lines += ["", "THREADS THAT WOKE (wake-ups/s, CPU ms over the window)"]
    for p in measured["processes"]:
        busy = [t for t in p["threads"] if t["wakeups_per_s"] > 0]
        shown = ", ".join(f"{t['tid']} {t['wakeups_per_s']:.2f}/s {t['cpu_ms']:.2f} ms" for t in busy)
        lines.append(f"  {p['role']}: {shown or 'none'}")
    if measured["ended"]:
        lines.append(f"  processes that ended during the window: {measured['ended']}")
    lines += ["", "TARGETS"]
    for t in result["targets"]:
        figure = f"{t['measured']:.4f} {t['unit']}" if t["unit"] == "%" else f"{t['measured']:.2f} {t['unit']}"
        limit = f"{t['limit']:g} {t['unit']}"
        lines.append(f"{t['target']:<52} {figure:>12} {limit:>9}  {t.get('status', _status(t['met']))}")
    return "\n".join(lines)


def run(args: argparse.Namespace, workdir: Path) -> dict:
    with contextlib.ExitStack() as stack:
        if args.database == "postgresql":
            database = stack.enter_context(postgres_database(args.pg_url))
            database_url = database.url
        else:
            database_url = f"sqlite:///{workdir / 'db.sqlite3'}"
        env = service_env(workdir, database_url)
        say(f"migrating a fresh {args.database} database in {workdir}")
        prepare(env)
        port = server.free_port()
        command = web_command(args.server, port, args.workers, args.threads)
        workers = int(command[command.index("--workers") + 1])
        logs = {"web": workdir / f"{args.server}.log", "runexpiry": workdir / "runexpiry.log"}
        processes: list[subprocess.Popen] = []
        stack.callback(stop, processes)
        load_average = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        processes.append(spawn([sys.executable, "manage.py", "runexpiry"], env, logs["runexpiry"]))
        processes.append(spawn(command, env, logs["web"]))
        daemon, web = processes
        up_s = wait_up(web, daemon, port, workers, logs)
        warm(port, args.warm)
        say(f"up in {up_s:.1f} s; settling {args.settle:g} s, then measuring {args.seconds:g} s")
        time.sleep(args.settle)
        measured = measure(web.pid, daemon.pid, args.seconds, args.server)
        for name, process in (("web", web), ("runexpiry", daemon)):
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited during the window:\n{tail(logs[name])}")
    total = totals(measured)
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "database": args.database,
        "load_average": load_average,
        "server": args.server,
        "command": " ".join(command[1:]),
        "up_s": up_s,
        "settle_s": args.settle,
        "warm_requests": args.warm,
    }
    return {"meta": meta, "measured": measured, "totals": total, "targets": targets(total)}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="bench-idle-"))
    try:
        result = run(args, workdir)
    finally:
        if args.keep:
            say(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print(render(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
