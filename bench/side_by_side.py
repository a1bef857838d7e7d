"""The figures of a side-by-side comparison, measured on our service as `make run` starts it.

    .venv/bin/python -m bench.side_by_side                        # 3 runs of every figure, SQLite
    .venv/bin/python -m bench.side_by_side --runs 5 --json bench/results/side-latest.json
    .venv/bin/python -m bench.side_by_side --seconds 1 --runs 1 --expiring 3 --racers 5 --large-mb 4   # a smoke run

Starts gunicorn with `make run`'s own command line (deploy/web_servers.py) and
`manage.py runexpiry` beside it, as `make run` does (bench/idle.py's pieces),
on a temporary database (SQLite, or a PostgreSQL database created and
dropped on --pg-url) and temporary var and media directories, seeds a user
with a 100 B file and a large one (bench/web/seed.py), then measures, every
run on shares of its own:

- the hot 100 B link: wrk -t2 -c16 on GET /s/<token> of a link without a
  limit; downloads a second counts 200s only (responses minus the ones wrk
  counts as status errors, >= 400: the link answers a client that does not
  ask for HTML with its file or a refusal, never 1xx/3xx), p50 and p99 from
  wrk's histogram;
- one curl downloading the large file's link (MB = 10^6 bytes), and one curl
  uploading it (multipart POST /api/files/ with the user's API token, the
  file deleted again afterwards);
- expiry: --expiring shares each created with expires_in 1 s, each polled
  (GET in a loop on a kept-open connection, from the moment it exists) by a
  thread of its own, which records when the first refusal arrived after
  the share's expires_at; the worst of them;
- a one-download link (max_downloads 1) of the 100 B file, then of the large
  one, raced by --racers threads, each connected first and released
  together: how many complete 200 bodies of the file's length came back.

Public links allow LINK_RATE_LIMIT requests a minute per client address (600
by default), which one loopback client exceeds in a second: the service runs
with --link-rate-limit (default 10^9, as bench.web does), so what is measured
is the link, not the limiter. Exit status 0 whatever the figures.
"""

import argparse
import contextlib
import http.client
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from bench import idle
from bench.side_report import IDLE_NOTE, labels, render
from bench.web import database, load, server

IDLE_SETTLE_S = 10.0  # as bench.idle's default
HTTP_TIMEOUT_S = 120.0
EXPIRES_IN_S = 1
# How long past its expires_at a link is polled before it counts as never refused.
POLL_GIVE_UP_S = 10.0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.side_by_side",
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1] + "\n" + IDLE_NOTE + ".",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--runs", type=int, default=3, help="times each figure is measured, on fresh shares (3)")
    parser.add_argument("--seconds", type=int, default=20, help="wrk's duration on the hot link, whole seconds (20)")
    parser.add_argument("--connections", type=int, default=16, help="wrk's connections on the hot link (16)")
    parser.add_argument("--large-mb", type=int, default=100, help="the large file, MiB (100)")
    parser.add_argument("--expiring", type=int, default=20, help="shares expiring 1 s after creation, per run (20)")
    parser.add_argument("--racers", type=int, default=50, help="clients racing for a one-download link (50)")
    default_db = "postgresql" if os.environ.get("DATABASE_URL", "").startswith("postgres") else "sqlite"
    parser.add_argument(
        "--database", choices=("sqlite", "postgresql"), default=default_db, help=f"the service's ({default_db})"
    )
    parser.add_argument(
        "--pg-url",
        default=os.environ.get("DATABASE_URL", "") if default_db == "postgresql" else database.DEFAULT_PG_URL,
        help="PostgreSQL server; the benchmark makes (and drops) a database of its own there",
    )
    parser.add_argument("--workers", type=int, help="WEB_WORKERS (default: make run's rule)")
    parser.add_argument("--threads", type=int, help="WEB_THREADS for make (default: the Makefile's)")
    parser.add_argument(
        "--link-rate-limit",
        type=int,
        default=1_000_000_000,
        help="the service's LINK_RATE_LIMIT, requests a minute per address (default 10^9; 600 is the product's)",
    )
    parser.add_argument(
        "--idle-seconds",
        type=float,
        default=0.0,
        help=f"also measure idle CPU and PSS (bench.idle's measure) for this long, after {IDLE_SETTLE_S:g} s "
        "of rest, before any request (0: not here; use python -m bench.idle)",
    )
    parser.add_argument("--json", type=Path, help="also write every figure and its details here")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs)")
    return parser.parse_args(argv)


# --- the service ----------------------------------------------------------------


@dataclass
class Service:
    """The running service, and what the seed made for it: the user's API
    token and, by key ("small", "large"), each file's id, size and path."""

    base_url: str
    token: str
    paths: dict[str, Path]
    sizes: dict[str, int] = field(default_factory=dict)
    file_ids: dict[str, int] = field(default_factory=dict)

    def api(self, method: str, path: str, body: dict | None = None) -> dict | None:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base_url + path, data=data, method=method)
        request.add_header("Authorization", f"Token {self.token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as response:
            text = response.read()
        return json.loads(text) if text else None

    def share(self, key: str, *, expires_in: int = 3600, max_downloads: int | None = None) -> dict:
        """A fresh share of the seeded file `key` ("small" or "large")."""
        body = {"file": self.file_ids[key], "expires_in": expires_in}
        if max_downloads is not None:
            body["max_downloads"] = max_downloads
        return self.api("POST", "/api/shares/", body)


@contextlib.contextmanager
def service(args: argparse.Namespace, workdir: Path):
    """make run's two processes on a fresh, seeded database; stopped at the end."""
    with contextlib.ExitStack() as stack:
        if args.database == "postgresql":
            database_url = stack.enter_context(database.postgres_database(args.pg_url)).url
        else:
            database_url = f"sqlite:///{workdir / 'db.sqlite3'}"
        env = idle.service_env(workdir, database_url)
        env["LINK_RATE_LIMIT"] = str(args.link_rate_limit)
        idle.say(f"migrating a fresh {args.database} database in {workdir}")
        idle.prepare(env)
        paths = {"small": workdir / "small.bin", "large": workdir / "large.bin"}
        for key, size in (("small", 100), ("large", args.large_mb << 20)):
            paths[key].write_bytes(os.urandom(size))
        seeded = database.seed({**env, "DJANGO_SETTINGS_MODULE": "microcloud.settings"}, paths, list_shares=0)
        port = server.free_port()
        command = idle.web_command("gunicorn", port, args.workers, args.threads)
        workers = int(command[command.index("--workers") + 1])
        logs = {"gunicorn": workdir / "gunicorn.log", "runexpiry": workdir / "runexpiry.log"}
        processes: list[subprocess.Popen] = []
        stack.callback(idle.stop, processes)
        processes.append(idle.spawn([sys.executable, "manage.py", "runexpiry"], env, logs["runexpiry"]))
        processes.append(idle.spawn(command, env, logs["gunicorn"]))
        daemon, web = processes
        up_s = idle.wait_up(web, daemon, port, workers, logs)
        meta = {"gunicorn": " ".join(command[1:]), "up_s": up_s, "workers": workers}
        if args.idle_seconds > 0:
            idle.say(f"up in {up_s:.1f} s; resting {IDLE_SETTLE_S:g} s, then idle for {args.idle_seconds:g} s")
            time.sleep(IDLE_SETTLE_S)
            meta["idle"] = idle.totals(idle.measure(web.pid, daemon.pid, args.idle_seconds))
        base_url = f"http://127.0.0.1:{port}"
        this = Service(base_url, seeded["reader_token"], paths, {k: p.stat().st_size for k, p in paths.items()})
        names = {f"{key}.bin": key for key in paths}
        for row in this.api("GET", "/api/files/?page_size=500")["results"]:
            if row["name"] in names:
                this.file_ids[names[row["name"]]] = row["id"]
        yield this, meta
        for name, process in (("gunicorn", web), ("runexpiry", daemon)):
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited during the runs:\n{idle.tail(logs[name])}")


# --- the figures ------------------------------------------------------------------


def hot_link(svc: Service, wrk: str, script: Path, args: argparse.Namespace) -> dict:
    token = svc.share("small")["token"]
    cell = load.run(wrk, script, f"{svc.base_url}/s/{token}", connections=args.connections, seconds=args.seconds)
    non_2xx = cell["errors"]["status"]
    ok = cell["requests"] - non_2xx
    return {
        "hot_ok_per_s": ok / cell["seconds"],
        "hot_p50_ms": cell["p50_ms"],
        "hot_p99_ms": cell["p99_ms"],
        "hot": {
            "ok": ok,
            "non_2xx": non_2xx,
            "socket_errors": cell["failed"] - non_2xx,
            "bytes_per_response": cell["bytes"] / cell["requests"] if cell["requests"] else None,
            "seconds": cell["seconds"],
        },
    }


def curl(*arguments: str) -> list[str]:
    done = subprocess.run(
        ["curl", "-sS", *arguments], capture_output=True, text=True, timeout=HTTP_TIMEOUT_S * 5, check=True
    )
    return done.stdout.split()


def download(svc: Service) -> dict:
    token = svc.share("large")["token"]
    status, speed, size = curl(
        "-o", "/dev/null", "-w", "%{http_code} %{speed_download} %{size_download}", f"{svc.base_url}/s/{token}"
    )
    if status != "200" or int(size) != svc.sizes["large"]:
        raise RuntimeError(f"the large download answered {status} with {size} bytes")
    return {"download_mb_per_s": float(speed) / 1e6}


def upload(svc: Service, workdir: Path) -> dict:
    out = workdir / "upload.json"
    status, seconds = curl(
        *("-o", str(out), "-w", "%{http_code} %{time_total}"),
        *("-H", f"Authorization: Token {svc.token}", "-F", f"file=@{svc.paths['large']}"),
        f"{svc.base_url}/api/files/",
    )
    if status != "201":
        raise RuntimeError(f"the upload answered {status}: {out.read_text()[:500]}")
    svc.api("DELETE", f"/api/files/{json.loads(out.read_text())['id']}/")
    return {"upload_s": float(seconds)}


def poll_until_refused(svc: Service, share: dict, found: dict) -> None:
    """GET the link in a loop until it is refused; note when, against its expires_at."""
    expires_at = datetime.fromisoformat(share["expires_at"]).timestamp()
    connection = http.client.HTTPConnection(svc.base_url.removeprefix("http://"), timeout=HTTP_TIMEOUT_S)
    served_late = 0  # 200s to requests sent after expires_at: must stay 0
    try:
        while time.time() < expires_at + POLL_GIVE_UP_S:
            sent = time.time()
            connection.request("GET", f"/s/{share['token']}")
            response = connection.getresponse()
            response.read()
            arrived = time.time()
            if response.status == 200:
                served_late += sent > expires_at
                continue
            found.update(
                status=response.status, after_ms=(arrived - expires_at) * 1000, sent_ms=(sent - expires_at) * 1000
            )
            break
    finally:
        connection.close()
        found["served_late"] = served_late


def expiry(svc: Service, count: int) -> dict:
    """`count` shares of 1 s, each polled from its creation by a thread of its own."""
    results: list[dict] = [{} for _ in range(count)]
    pollers = []
    for found in results:
        share = svc.share("small", expires_in=EXPIRES_IN_S)
        poller = threading.Thread(target=poll_until_refused, args=(svc, share, found), daemon=True)
        poller.start()
        pollers.append(poller)
    for poller in pollers:
        poller.join(EXPIRES_IN_S + POLL_GIVE_UP_S + HTTP_TIMEOUT_S)
    never = sum("after_ms" not in found for found in results)
    early = [found for found in results if found.get("after_ms", 0) < 0]
    afters = [found["after_ms"] for found in results if "after_ms" in found]
    return {
        "refused_after_ms": max(afters) if afters and not never else None,
        "expiry": {
            "after_ms": [round(a, 2) for a in afters],
            "statuses": sorted({found["status"] for found in results if "status" in found}),
            "never_refused": never,
            "refused_before_expiry": len(early),
            "served_after_expiry": sum(found.get("served_late", 0) for found in results),
        },
    }


def race(svc: Service, key: str, racers: int) -> dict:
    """A one-download link of file `key`, fetched by `racers` threads released together."""
    token, size = svc.share(key, max_downloads=1)["token"], svc.sizes[key]
    start = threading.Barrier(racers)
    outcomes: list[tuple] = [("not run", 0)] * racers

    def racer(n: int) -> None:
        connection = http.client.HTTPConnection(svc.base_url.removeprefix("http://"), timeout=HTTP_TIMEOUT_S)
        try:
            connection.connect()
            start.wait(HTTP_TIMEOUT_S)
            connection.request("GET", f"/s/{token}")
            response = connection.getresponse()
            received = 0
            while chunk := response.read(1 << 20):
                received += len(chunk)
            outcomes[n] = (response.status, received)
        except (OSError, http.client.HTTPException, threading.BrokenBarrierError) as error:
            outcomes[n] = (type(error).__name__, 0)
        finally:
            connection.close()

    threads = [threading.Thread(target=racer, args=(n,), daemon=True) for n in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(HTTP_TIMEOUT_S * 2)
    statuses: dict[str, int] = {}
    for status, _ in outcomes:
        statuses[str(status)] = statuses.get(str(status), 0) + 1
    return {
        f"copies_{key}": sum(status == 200 and received == size for status, received in outcomes),
        f"race_{key}": {
            "statuses": statuses,
            "partial_200s": sum(status == 200 and received != size for status, received in outcomes),
            "bytes_received": sum(received for _, received in outcomes),
            "file_bytes": size,
        },
    }


def measure_run(svc: Service, wrk: str, script: Path, args: argparse.Namespace, workdir: Path) -> dict:
    steps = [
        ("hot link", lambda: hot_link(svc, wrk, script, args)),
        ("download", lambda: download(svc)),
        ("upload", lambda: upload(svc, workdir)),
        ("expiry", lambda: expiry(svc, args.expiring)),
        ("race, 100 B", lambda: race(svc, "small", args.racers)),
        (f"race, {args.large_mb} MiB", lambda: race(svc, "large", args.racers)),
    ]
    figures: dict = {}
    for name, step in steps:
        idle.say(f"  {name}")
        try:
            figures.update(step())
        except (OSError, RuntimeError, subprocess.SubprocessError, urllib.error.URLError, KeyError) as error:
            figures.setdefault("errors", {})[name] = f"{type(error).__name__}: {error}"
    return figures


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    wrk = load.find_wrk()
    workdir = Path(tempfile.mkdtemp(prefix="bench-side-"))
    try:
        load_average = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        script = load.write_script(workdir)
        with service(args, workdir) as (svc, meta):
            runs = []
            for n in range(1, args.runs + 1):
                idle.say(f"run {n} of {args.runs}")
                runs.append(measure_run(svc, wrk, script, args, workdir))
    finally:
        if args.keep:
            idle.say(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    meta.update(
        date=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        cpus=os.cpu_count(),
        python=platform.python_version(),
        database=args.database,
        load_average=load_average,
        wrk=load.version(wrk),
        options={k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
    )
    result = {"meta": meta, "figures": {k: {"label": lb, "unit": u} for k, lb, u, _ in labels(args)}, "runs": runs}
    print(render(result, args))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
