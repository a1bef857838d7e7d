"""python -m bench.mixed: the expiry daemon's lateness under web load.

Run from the repository root with the project's virtualenv, e.g.
    .venv/bin/python -m bench.mixed --json bench/results/mixed-latest.json
    .venv/bin/python -m bench.mixed --smoke --databases sqlite
    .venv/bin/python -m bench.mixed --profile /tmp/mixed-profile   (py-spy on the daemon)
    .venv/bin/python -m bench.mixed --render bench/results/mixed-latest.json
Per database: gunicorn as `make run` starts it and `manage.py runexpiry` as a
process of its own, both on a fresh database; shares seeded to fall due at
--due-per-s for --seconds while wrk downloads and creates shares at
--connections. Loopback only; every wait is bounded, and gunicorn, the
daemon, the samplers, the PostgreSQL database and the work directory are
removed whatever happens. Progress goes to stderr, the tables to stdout.
"""

import argparse
import contextlib
import dataclasses
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

from bench import procstats
from bench.db import REPO_ROOT
from bench.mixed import daemon, lateness, profile, report, traffic, waits
from bench.mixed.plan import FULL, SMOKE, Plan
from bench.web import database, load, server
from bench.web.scenarios import FLOOR_VIEW

DRAIN_TIMEOUT_S = 10.0  # after the load: for the last shares due to be expired


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.mixed", description="Expiry lateness under web load.")
    parser.add_argument("--smoke", action="store_true", help="small and short: well under a minute per database")
    parser.add_argument("--databases", default="sqlite,postgresql", help="comma-separated subset of sqlite,postgresql")
    parser.add_argument(
        "--pg-url",
        default=os.environ.get("PG_BENCH_URL", database.DEFAULT_PG_URL),
        help="PostgreSQL server to create the bench database on (env PG_BENCH_URL)",
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write every figure to FILE as JSON")
    parser.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help="record the daemon with py-spy into DIR (it pauses the daemon to sample: figures of a profiled run "
        "are a little worse)",
    )
    parser.add_argument(
        "--daemon-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a variable in the daemon's environment only, e.g. PGOPTIONS='-c synchronous_commit=off' "
        "(repeatable; recorded in the JSON)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs, id logs)")
    parser.add_argument("--render", type=Path, metavar="FILE", help="print the tables of a saved JSON run and exit")
    sizes = parser.add_argument_group("sizes (defaults: full run; --smoke changes them, a flag overrides both)")
    for f in dataclasses.fields(Plan):
        kind = float if f.type in (float, "float") else int  # workers has a default_factory, no default
        sizes.add_argument(f"--{f.name.replace('_', '-')}", type=kind, metavar="N")
    args = parser.parse_args(argv)
    if any("=" not in item for item in args.daemon_env):
        parser.error("--daemon-env takes NAME=VALUE")
    unknown = set(args.databases.split(",")) - set(report.DATABASES)
    if unknown:
        parser.error(f"unknown databases: {', '.join(sorted(unknown))}")
    return args


def make_plan(args: argparse.Namespace) -> Plan:
    base = SMOKE if args.smoke else FULL
    chosen = {f.name: getattr(args, f.name) for f in dataclasses.fields(Plan) if getattr(args, f.name) is not None}
    return dataclasses.replace(base, **chosen)


def seed_due(env: dict[str, str], **options) -> tuple[dict, float]:
    """Run bench/mixed/due.py; return its ids and how long it took."""
    command = [sys.executable, "-m", "bench.mixed.due", "--owner", "bench-writer"]
    for name, value in options.items():
        command += [f"--{name}", repr(value)]
    started = time.monotonic()
    done = subprocess.run(command, cwd=REPO_ROOT, env=env, check=True, timeout=300, capture_output=True, text=True)
    return json.loads(done.stdout), time.monotonic() - started


def run_database(vendor: str, args, plan: Plan, workdir: Path, small: Path, wrk: str, script: Path, say) -> dict:
    opened = database.sqlite_database(workdir) if vendor == "sqlite" else database.postgres_database(args.pg_url)
    with opened as db:
        env = database.app_env(
            db, static_root=workdir / "static", media_root=workdir / f"media-{vendor}", upload_limit=1024**2
        )
        env["PGAPPNAME"] = waits.WEB_APPLICATION_NAME
        say(f"{vendor} {db.version}: migrate and seed")
        database.migrate(env)
        seeded = database.seed(env, {"small": small}, 1)
        say(f"{vendor}: gunicorn {plan.workers} workers x {plan.threads} threads")
        with server.web_server(
            env, workdir / f"gunicorn-{vendor}.log", workers=plan.workers, threads=plan.threads, probe_path=FLOOR_VIEW
        ) as web:
            if plan.warmup_seconds:
                say(f"{vendor}: warm-up, the mix for {plan.warmup_seconds} s")
                traffic.run(
                    wrk,
                    script,
                    web.base_url,
                    seeded,
                    connections=plan.connections,
                    seconds=plan.warmup_seconds,
                    plan=plan,
                )
            # A first start of the daemon: how long it takes to be ready sets the lead.
            warm, seed_s = seed_due(env)
            with daemon.runexpiry(env, workdir, f"runexpiry-warmup-{vendor}", warm["canary"]) as started:
                startup_s = started.ready_s
            count = plan.due_per_s * plan.seconds
            # Seeding, then the daemon's start and first window load (which the
            # warm-up start, on an empty table, does not show): all before the
            # first deadline, even on a busy machine.
            lead = seed_s + count * 200e-6 + 2 * startup_s + 1.5
            first = time.time() + lead
            say(f"{vendor}: {count:,} shares due from {lead:.1f} s on (daemon start-up {startup_s:.2f} s)")
            due, _ = seed_due(env, count=count, first=first, span=float(plan.seconds))
            return measure(vendor, args, plan, workdir, env, db, web, seeded, due, first, wrk, script, say) | {
                "version": db.version,
                "daemon_startup_s": startup_s,
            }


def measure(vendor, args, plan: Plan, workdir, env, db, web, seeded, due, first, wrk, script, say) -> dict:
    daemon_env = {**env, **dict(item.split("=", 1) for item in args.daemon_env)}
    with daemon.runexpiry(daemon_env, workdir, f"runexpiry-{vendor}", due["canary"]) as expiry:
        ready_at = time.time()
        # The load starts now and ends half a second after the last deadline.
        seconds = math.ceil(first + plan.seconds + 0.5 - ready_at)
        spy_file = args.profile / f"daemon-{vendor}.txt" if args.profile else None
        say(f"{vendor}: daemon ready; wrk at {plan.connections} connections for {seconds} s")
        with (
            waits.pg_activity(db.url) if vendor == "postgresql" else contextlib.nullcontext() as sampler,
            waits.py_spy(expiry.pid, spy_file, seconds) if spy_file else contextlib.nullcontext(),
        ):
            before, delay_before = procstats.sample(expiry.pid), expiry.run_delay_s()
            load_start = time.time()
            figures = traffic.run(
                wrk, script, web.base_url, seeded, connections=plan.connections, seconds=seconds, plan=plan
            )
            load_end = time.time()
            after, delay_after = procstats.sample(expiry.pid), expiry.run_delay_s()
            pg_waits = sampler.summary() if sampler else None
        # Shares created over REST near the end fall due after it; every
        # share due during the load must be expired before the figures are read.
        give_up = time.monotonic() + DRAIN_TIMEOUT_S
        while time.monotonic() < give_up:
            pending = set(lateness.deadlines(db.url, load_start, load_end)) - expiry.logged_ids()
            if not pending:
                break
            expiry.check_alive()
            time.sleep(0.1)
    due_now = lateness.deadlines(db.url, load_start, load_end)
    created = lateness.count_since(db.url, due["canary"])
    result = {
        "web": figures,
        "creates_per_s": created / figures["seconds"] if figures["seconds"] else None,
        "seeded": {"count": plan.due_per_s * plan.seconds, "ids": due["ids"], "first_deadline": first},
        "headroom_s": first - ready_at,
        "load": {"start": load_start, "end": load_end, "load_average_after": os.getloadavg()},
        "daemon": {
            "cpu_percent": 100 * (after.cpu_run_s - before.cpu_run_s) / (load_end - load_start),
            # Runnable but not running, summed over its threads, % of the load's time.
            "run_delay_percent": 100 * (delay_after - delay_before) / (load_end - load_start),
            "exit_code": expiry.process.returncode,
        },
        "lateness": lateness.summarize(due_now, lateness.read_id_log(expiry.id_log), due["ids"]),
        "pg_waits": pg_waits,
    }
    if spy_file:
        result["profile"] = profile.read(spy_file) if spy_file.exists() else {"error": "py-spy wrote nothing"}
    all_ = result["lateness"]["all"]
    say(
        f"{vendor}: {figures['req_per_s']:.0f} req/s, {all_['due']} shares due, p99 "
        f"{all_['lateness']['p99_ms'] or float('nan'):.2f} ms, {all_['not_expired']} not expired"
    )
    return result


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.render:
        print(report.render(json.loads(args.render.read_text())))
        return 0
    plan = make_plan(args)
    wrk = load.find_wrk()
    if args.profile:
        if waits.find_py_spy() is None:
            raise SystemExit("--profile needs py-spy (pip install py-spy)")
        args.profile.mkdir(parents=True, exist_ok=True)
    # SIGTERM unwinds like Ctrl-C, so every process and the database are cleaned up.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    def say(message: str) -> None:
        print(f"[bench.mixed {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    started = time.monotonic()
    meta = report.machine()
    meta.update(wrk=load.version(wrk), gunicorn=server.version("gunicorn"), load_average_start=os.getloadavg())
    databases: dict[str, dict] = {}
    workdir = Path(tempfile.mkdtemp(prefix="bench-mixed-"))
    try:
        say(f"work directory {workdir}")
        (workdir / "static").mkdir()
        small = workdir / "small.bin"
        small.write_bytes(os.urandom(100))
        script = traffic.write_script(workdir)
        for vendor in args.databases.split(","):
            try:
                databases[vendor] = run_database(vendor, args, plan, workdir, small, wrk, script, say)
            except Exception as exc:  # one database failing must not lose the other's figures
                traceback.print_exc()
                databases[vendor] = {"error": f"{type(exc).__name__}: {str(exc).strip()[:300]}"}
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    meta["duration_s"] = round(time.monotonic() - started, 1)
    meta["load_average_end"] = os.getloadavg()
    meta["command"] = " ".join(["python -m bench.mixed", *(argv if argv is not None else sys.argv[1:])])
    meta["preset"] = "smoke" if args.smoke else "full"
    meta["profiled"] = bool(args.profile)
    meta["daemon_env"] = args.daemon_env
    full = report.build(meta, dataclasses.asdict(plan), databases)
    print(report.render(full))
    if args.json:
        report.write_json(full, args.json)
        say(f"wrote {args.json}")
    say(f"done in {meta['duration_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
