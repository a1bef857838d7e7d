"""The CPU of one request in process: the floor view against a hot-link download.

    python -m bench.web_probe [--database sqlite|postgresql] [--requests 3000]
                              [--rounds 3] [--profile N] [--sort tottime] [--json]

`bench.web` measures through gunicorn and wrk, where the machine's other
processes and the kernel share the figure; this probe calls the WSGI
application itself, one thread, no HTTP, against a database migrated and
seeded as `bench.web` does (bench/web/database.py, bench/web/seed.py), so the
difference between the two rows is what a download does that an empty
request does not. `--profile N` prints the N functions with the most
cumulative time of the download under cProfile after the rounds.
"""

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

from bench.web.database import DEFAULT_PG_URL, app_env, migrate, postgres_database, seed, sqlite_database

SMALL_FILE = b"x" * 100  # the hot link's 100 B, as bench.web's "small"


def wsgi_call(app, path: str) -> int:
    """One GET through the whole application; the body is read and closed
    as a server would. Returns the status code."""
    status = []

    def start_response(line, headers, exc_info=None):
        status.append(int(line.split(" ", 1)[0]))

    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": "/" + path.lstrip("/"),
        "QUERY_STRING": "",
        "SERVER_NAME": "localhost",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": "localhost",
        "HTTP_USER_AGENT": "web-probe",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    body = app(environ, start_response)
    try:
        for _ in body:
            pass
    finally:
        close = getattr(body, "close", None)
        if close is not None:
            close()
    return status[0]


def per_request_us(app, path: str, requests: int) -> tuple[float, float]:
    """Mean CPU and wall microseconds of one request to `path`."""
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(requests):
        code = wsgi_call(app, path)
        if code != 200:
            raise SystemExit(f"{path} answered {code}")
    return (time.process_time() - cpu) / requests * 1e6, (time.perf_counter() - wall) / requests * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.web_probe", description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--pg-url", default=DEFAULT_PG_URL, help="the server to create a scratch database on")
    parser.add_argument("--requests", type=int, default=3000, help="requests per path and round (default 3000)")
    parser.add_argument("--rounds", type=int, default=3, help="floor and download alternated this often (default 3)")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="then profile the download, top N")
    parser.add_argument(
        "--sort",
        choices=("cumulative", "tottime"),
        default="cumulative",
        help="the profile's order (default cumulative)",
    )
    parser.add_argument("--json", action="store_true", help="print the rounds as JSON instead")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="bench-web-probe-") as tmp:
        workdir = Path(tmp)
        small = workdir / "small.bin"
        small.write_bytes(SMALL_FILE)
        opened = sqlite_database(workdir) if args.database == "sqlite" else postgres_database(args.pg_url)
        with opened as database:
            env = app_env(database, static_root=workdir / "static", media_root=workdir / "media", upload_limit=1 << 20)
            env["DJANGO_SETTINGS_MODULE"] = "bench.web.settings"
            migrate(env)
            links = seed(env, {"small": small}, list_shares=1)["links"]
            os.environ.clear()
            os.environ.update(env)
            from django.core.wsgi import get_wsgi_application

            app = get_wsgi_application()
            from bench.web.urls import FLOOR_PATH  # needs the settings

            hot = f"s/{links['small']}/download"
            per_request_us(app, FLOOR_PATH, 200)  # warm both paths
            per_request_us(app, hot, 200)
            rounds = []
            for _ in range(args.rounds):
                floor_cpu, floor_wall = per_request_us(app, FLOOR_PATH, args.requests)
                hot_cpu, hot_wall = per_request_us(app, hot, args.requests)
                rounds.append(
                    {
                        "floor_cpu_us": floor_cpu,
                        "floor_wall_us": floor_wall,
                        "download_cpu_us": hot_cpu,
                        "download_wall_us": hot_wall,
                    }
                )
            if args.json:
                json.dump({"database": database.vendor, "requests": args.requests, "rounds": rounds}, sys.stdout)
            else:
                print(f"{database.vendor} {database.version}, {args.requests} requests a row, CPU / wall us a request")
                for number, r in enumerate(rounds, start=1):
                    print(
                        f"round {number}: floor {r['floor_cpu_us']:.0f} / {r['floor_wall_us']:.0f}   "
                        f"download {r['download_cpu_us']:.0f} / {r['download_wall_us']:.0f}   "
                        f"ratio {r['download_cpu_us'] / r['floor_cpu_us']:.2f}x"
                    )
            if args.profile:
                profile = cProfile.Profile()
                profile.runcall(per_request_us, app, hot, args.requests)
                pstats.Stats(profile).sort_stats(args.sort).print_stats(args.profile)
            from django.db import connections

            connections.close_all()  # before the PostgreSQL database is dropped
    return 0


if __name__ == "__main__":
    sys.exit(main())
