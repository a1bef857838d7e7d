"""python -m bench.web: our views over HTTP against the floor of the same server.

Run from the repository root with the project's virtualenv, e.g.
    .venv/bin/python -m bench.web --json bench/results/web-latest.json
    .venv/bin/python -m bench.web --smoke --databases sqlite
    .venv/bin/python -m bench.web --seconds 3 --connections 16 --scenarios floor_view,download_small
    .venv/bin/python -m bench.web --databases sqlite --scenarios download_large,download_zip
    .venv/bin/python -m bench.web --databases sqlite --scenarios download_large,uploads --storage bucket
    .venv/bin/python -m bench.web --server granian --scenarios floor_view,download_small
    .venv/bin/python -m bench.web --render bench/results/web-latest.json
Loopback only. Every wrk run lasts --seconds, every wait has a time limit, and
the web server, moto, the PostgreSQL database and the work directory are removed
whatever happens. Progress goes to stderr, the tables to stdout.
"""

import argparse
import dataclasses
import json
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

from bench import report as expiry_report
from bench.web import bucket, database, front, load, report, scenarios, server, targets
from bench.web.plan import FULL, SMOKE, Plan
from deploy.web_servers import SERVERS, default_workers

MIB = 1024 * 1024
CHOICES = (*scenarios.BY_KEY, "uploads")
STORAGES = ("disk", "bucket")
# What the bucket pass measures: where the bytes are read or written. The
# other scenarios never touch a file's bytes, or only small ones.
BUCKET_CHOICES = ("download_large", "uploads")
SIZE_HELP = {
    "zip_files": "download_zip: how many files its share holds",
    "zip_file_bytes": "download_zip: bytes of each of its files",
}


def scenario_list() -> str:
    """--help's list of the scenarios, at the full run's sizes."""
    lines = [f"  {s.key:<20} {scenarios.label(s, FULL)}" for s in scenarios.SCENARIOS]
    lines.append(
        f"  {'uploads':<20} POST /api/files/ and tus /api/uploads/ of {scenarios.human_bytes(FULL.upload_bytes)}"
    )
    return (
        "scenarios (full run's sizes):\n"
        + "\n".join(lines)
        + f"\n\n{scenarios.ZIP_KEY} is compared with download_large: its MB/s must be at least "
        f"{targets.ZIP_SPEED_SHARE * 100:.0f} % of the single file's (a target line, met or MISSED); "
        "one whole zip is checked untimed first (length = Content-Length, zipfile's testzip())."
        "\n\nstorage (--storage):\n"
        "  disk    every chosen scenario, the bytes in MEDIA_ROOT (the default storage)\n"
        f"  bucket  {' and '.join(BUCKET_CHOICES)} (when chosen) again, on a fresh database, with STORAGE_URL\n"
        "          naming a bucket on a moto server the benchmark starts and stops itself\n"
        "          (moto[server], requirements-dev.txt) and seeds as it seeds the disk; moto keeps the objects\n"
        "          in its own Python process on the same machine, so its MB/s are a floor of our overhead plus\n"
        "          moto's, not a real bucket's throughput; printed as figures, no target."
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.web",
        description="Benchmark the web paths.",
        epilog=scenario_list(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, 1 s cells: about a minute")
    parser.add_argument("--databases", default="sqlite,postgresql", help="comma-separated subset of sqlite,postgresql")
    parser.add_argument(
        "--pg-url",
        default=os.environ.get("PG_BENCH_URL", database.DEFAULT_PG_URL),
        help="PostgreSQL server to create the bench database on (env PG_BENCH_URL)",
    )
    parser.add_argument("--scenarios", default=",".join(CHOICES), help=f"comma-separated subset of {CHOICES}")
    parser.add_argument(
        "--storage",
        default=",".join(STORAGES),
        help=f"comma-separated subset of {STORAGES}: where the files' bytes live (see below)",
    )
    parser.add_argument("--connections", help="comma-separated concurrencies (default 1,16,64)")
    parser.add_argument(
        "--server",
        choices=SERVERS,
        default="gunicorn",
        help="the web server, as `make run WEB_SERVER=...` starts it (default gunicorn)",
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write every figure to FILE as JSON")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (files, web server logs)")
    parser.add_argument("--render", type=Path, metavar="FILE", help="print the tables of a saved JSON run and exit")
    sizes = parser.add_argument_group("sizes (defaults: full run; --smoke changes them, a flag overrides both)")
    for f in dataclasses.fields(Plan):
        if f.name != "connections":
            sizes.add_argument(f"--{f.name.replace('_', '-')}", type=int, metavar="N", help=SIZE_HELP.get(f.name))
    args = parser.parse_args(argv)
    for name, known in (("databases", targets.DATABASES), ("scenarios", CHOICES), ("storage", STORAGES)):
        unknown = set(getattr(args, name).split(",")) - set(known)
        if unknown:
            parser.error(f"unknown {name}: {', '.join(sorted(unknown))}")
    if args.zip_files is not None and args.zip_files < 1:
        parser.error("--zip-files must be at least 1")
    return args


def storages(args: argparse.Namespace) -> tuple[bool, list[str]]:
    """Whether the disk pass runs, and the scenarios of the bucket pass (none: no bucket pass)."""
    chosen, where = args.scenarios.split(","), args.storage.split(",")
    on_bucket = [key for key in BUCKET_CHOICES if key in chosen] if "bucket" in where else []
    return "disk" in where, on_bucket


def make_plan(args: argparse.Namespace) -> Plan:
    base = SMOKE if args.smoke else FULL
    chosen = {f.name: getattr(args, f.name) for f in dataclasses.fields(Plan) if getattr(args, f.name, None)}
    if args.server != "gunicorn" and not args.smoke and "workers" not in chosen:
        chosen["workers"] = default_workers(args.server)
    if args.connections:
        chosen["connections"] = tuple(int(c) for c in args.connections.split(","))
    return dataclasses.replace(base, **chosen)


def make_files(workdir: Path, plan: Plan) -> tuple[dict[str, Path], Path, list[Path]]:
    """Random bytes for each size, a STATIC_ROOT serving the same files, and
    the zip scenario's files (random too: a zip of them could not shrink them)."""
    files, static_root = {}, workdir / "static"
    (static_root / "bench").mkdir(parents=True)
    for size in scenarios.SIZES:
        path = workdir / f"{size}.bin"
        random_file(path, getattr(plan, f"{size}_bytes"))
        os.link(path, static_root / "bench" / path.name)
        files[size] = path
    zip_parts = [workdir / f"zip-{n:02d}.bin" for n in range(1, plan.zip_files + 1)]
    for path in zip_parts:
        random_file(path, plan.zip_file_bytes)
    return files, static_root, zip_parts


def random_file(path: Path, size: int) -> None:
    left = size
    with open(path, "wb") as f:
        while left > 0:
            f.write(os.urandom(min(MIB, left)))
            left -= MIB


def run_database(
    vendor: str, args, plan: Plan, workdir: Path, files, static_root, zip_parts, wrk: str, script, say
) -> dict:
    opened = database.sqlite_database(workdir) if vendor == "sqlite" else database.postgres_database(args.pg_url)
    with opened as db:
        env = database.app_env(
            db, static_root=static_root, media_root=workdir / f"media-{vendor}", upload_limit=plan.upload_limit_bytes
        )
        say(f"{vendor} {db.version}: migrate and seed")
        database.migrate(env)
        seeded = database.seed(env, files, plan.list_shares, zip_parts)
        say(f"{vendor}: {args.server} {plan.workers} workers x {plan.threads} threads")
        with serving(args, plan, env, workdir / f"{args.server}-{vendor}.log") as web:
            ctx = scenarios.Context(plan, seeded)
            result = scenarios.run_pass(web, ctx, wrk, script, args.scenarios.split(","), say)
        behind = [k for k in args.scenarios.split(",") if k in scenarios.BY_KEY and scenarios.BY_KEY[k].behind_nginx]
        if behind:
            offloaded = run_behind_nginx(env, args, plan, workdir, vendor, static_root, ctx, wrk, script, behind, say)
            result["cells"].update(offloaded.get("cells", {}))
            result["not_built"].update(offloaded.get("not_built", {}))
        return {"version": db.version, "startup_s": web.ready_s, **result}


def run_behind_nginx(
    env, args, plan: Plan, workdir: Path, vendor: str, static_root: Path, ctx, wrk, script, keys, say
) -> dict:
    """The offload scenarios: nginx in front of a second web server with
    DOWNLOAD_OFFLOAD=x-accel-redirect (docs/deployment.md), and nginx
    serving the same file itself as their floor."""
    nginx_path = front.find_nginx()
    if nginx_path is None:
        return {"not_built": dict.fromkeys(keys, "nginx is not installed (apt-get install -y nginx)")}
    offload_env = {**env, "DOWNLOAD_OFFLOAD": "x-accel-redirect", "NUM_PROXIES": "1"}
    say(f"{vendor}: nginx in front of {args.server} with DOWNLOAD_OFFLOAD=x-accel-redirect")
    with serving(args, plan, offload_env, workdir / f"{args.server}-offload-{vendor}.log") as web:
        port = server.free_port()
        media_root = Path(offload_env["MEDIA_ROOT"])
        with front.nginx(
            nginx_path,
            workdir / f"nginx-{vendor}",
            port,
            media_root,
            f"127.0.0.1:{web.port}",
            static_root=static_root / "bench",
        ):
            proxied = server.Proxied(web, port)
            return scenarios.run_pass(proxied, ctx, wrk, script, keys, say, behind_nginx=True)


def serving(args, plan: Plan, env: dict[str, str], log: Path):
    """The web server of a pass, as `make run` starts it."""
    return server.web_server(
        env, log, server=args.server, workers=plan.workers, threads=plan.threads, probe_path=scenarios.FLOOR_VIEW
    )


def run_bucket(vendor: str, args, plan: Plan, workdir: Path, files, static_root, wrk, script, keys, say) -> dict:
    """`keys` again with the files' bytes in a bucket: a fresh database of
    the same vendor, seeded as the disk's (without the zip's files), and a
    web server whose STORAGE_URL names a bucket on a moto server of our own."""
    moto = bucket.find_moto()
    if moto is None:
        return {"error": "moto_server is not installed (moto[server] is in requirements-dev.txt: make install-dev)"}
    opened = database.sqlite_database(workdir) if vendor == "sqlite" else database.postgres_database(args.pg_url)
    with opened as db, bucket.moto_bucket(workdir / f"moto-{vendor}.log") as store:
        env = database.app_env(
            db,
            static_root=static_root,
            media_root=workdir / f"media-bucket-{vendor}",
            upload_limit=plan.upload_limit_bytes,
        )
        env.update(store.env())
        say(f"{vendor} {db.version}, bucket on moto {bucket.moto_version()} ({store.endpoint}): migrate and seed")
        database.migrate(env)
        seeded = database.seed(env, files, plan.list_shares)
        say(f"{vendor}, bucket: {args.server} {plan.workers} workers x {plan.threads} threads")
        with serving(args, plan, env, workdir / f"{args.server}-bucket-{vendor}.log") as web:
            result = scenarios.run_pass(web, scenarios.Context(plan, seeded), wrk, script, keys, say)
        return {"version": db.version, "moto": bucket.moto_version(), "startup_s": web.ready_s, **result}


def failure(exc: Exception) -> str:
    return f"{type(exc).__name__}: {str(exc).strip()[:300]}"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.render:
        print(report.render(report.rebuild(json.loads(args.render.read_text()))))
        return 0
    plan = make_plan(args)
    wrk = load.find_wrk()
    # SIGTERM unwinds like Ctrl-C, so the web server and the database are cleaned up.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    def say(message: str) -> None:
        print(f"[bench.web {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    started = time.monotonic()
    meta = expiry_report.machine()
    meta.update(wrk=load.version(wrk), server=args.server, server_version=server.version(args.server))
    databases: dict[str, dict] = {}
    workdir = Path(tempfile.mkdtemp(prefix="bench-web-"))
    try:
        say(f"work directory {workdir}")
        files, static_root, zip_parts = make_files(workdir, plan)
        script = load.write_script(workdir)
        on_disk, on_bucket = storages(args)
        for vendor in args.databases.split(","):
            # One pass failing must not lose the other passes' figures.
            measured: dict = {}
            if on_disk:
                try:
                    measured = run_database(
                        vendor, args, plan, workdir, files, static_root, zip_parts, wrk, script, say
                    )
                except Exception as exc:
                    traceback.print_exc()
                    measured = {"error": failure(exc)}
            if on_bucket:
                try:
                    measured["bucket"] = run_bucket(
                        vendor, args, plan, workdir, files, static_root, wrk, script, on_bucket, say
                    )
                except Exception as exc:
                    traceback.print_exc()
                    measured["bucket"] = {"error": failure(exc)}
            databases[vendor] = measured
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    meta["duration_s"] = round(time.monotonic() - started, 1)
    meta["load_average_end"] = os.getloadavg()
    meta["command"] = " ".join(["python -m bench.web", *(argv if argv is not None else sys.argv[1:])])
    meta["preset"] = "smoke" if args.smoke else "full"
    # What this run changed from its preset, so a short run is never read as a full one.
    base = dataclasses.asdict(SMOKE if args.smoke else FULL)
    meta["changed_from_preset"] = {k: v for k, v in dataclasses.asdict(plan).items() if v != base[k]}
    full = report.build(meta, dataclasses.asdict(plan), databases)
    print(report.render(full))
    if args.json:
        expiry_report.write_json(full, args.json)
        say(f"wrote {args.json}")
    say(f"done in {meta['duration_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
