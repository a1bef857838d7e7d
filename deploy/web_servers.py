"""The web server, gunicorn or granian, as `make run` and the container start it.

    python -m deploy.web_servers [MORE OPTIONS]

becomes (exec) the server that WEB_SERVER names, serving the app on
HOST:PORT with WEB_WORKERS processes of WEB_THREADS threads each. `make
run`, the container (deploy/entrypoint.py) and the benchmarks (bench.web,
bench.idle) all take its command line from here, so they serve alike.

gunicorn is the default, chosen by measurement (docs/benchmarks.md, "The
web server"; docs/deployment.md, "The web server: gunicorn or granian"):
gunicorn's requests carry their socket, which a limited link reads
(links/delivery.py) to give back the bytes a client that broke off never
received and to drop a client that stopped reading. granian answers an
empty view about twice as fast, the hot link 1.0-1.4 times as fast.
Under it a broken-off download of a limited link counts every byte read
from the file, a stalled client keeps its bytes reserved until the kernel
gives up on it (about 15 minutes), and there is no access log: its lines
would carry the links' tokens, which gunicorn's logger shortens
(microcloud/logfilters.py).

Only the standard library: the container's entrypoint imports this before
the settings can load.
"""

import os
import sys
from dataclasses import dataclass
from pathlib import Path

SERVERS = ("gunicorn", "granian")
APP = "microcloud.wsgi:application"
# Under podman's and docker's default grace of 10 s before SIGKILL, the
# container gives requests in flight less (deploy/entrypoint.py).
GRACEFUL_TIMEOUT = 10


class SettingError(ValueError):
    """A WEB_SERVER, HOST, PORT, WEB_WORKERS or WEB_THREADS that cannot be
    used; the message names it."""


def cores() -> int:
    return len(os.sched_getaffinity(0))


def default_workers(server: str) -> int:
    """gunicorn's gthread workers: two processes per core (a thread waiting on
    the database or the disk does not hold a whole process). granian's: one
    per core, its runtime holding the connections while the threads run the app."""
    return (2 if server == "gunicorn" else 1) * cores()


@dataclass(frozen=True)
class WebServer:
    name: str = "gunicorn"
    host: str = "127.0.0.1"
    port: int = 8000
    workers: int | None = None  # None: default_workers()
    threads: int = 4
    graceful_timeout: int = GRACEFUL_TIMEOUT  # what a stop gives requests in flight, in seconds
    access_log: bool = False  # on stdout; gunicorn's only (see above)

    @classmethod
    def from_environ(cls, environ=os.environ, **defaults) -> "WebServer":
        """The server the environment's WEB_SERVER, HOST, PORT, WEB_WORKERS and
        WEB_THREADS describe; `defaults` stand in for the unset or empty ones."""
        name = environ.get("WEB_SERVER", "").strip() or cls.name
        if name not in SERVERS:
            raise SettingError(f"WEB_SERVER must be one of {', '.join(SERVERS)}, got {name!r}")
        given = {"host": environ.get("HOST", "").strip()}
        for key, variable in (("port", "PORT"), ("workers", "WEB_WORKERS"), ("threads", "WEB_THREADS")):
            given[key] = positive(variable, environ.get(variable, ""))
        return cls(name=name, **{**defaults, **{key: value for key, value in given.items() if value}})

    @property
    def worker_count(self) -> int:
        return self.workers or default_workers(self.name)

    @property
    def executable(self) -> Path:
        return Path(sys.executable).with_name(self.name)

    def command(self, *more: str) -> list[str]:
        """The server's command line; `more`: options of its own to add."""
        if self.name == "granian":
            return self._granian(more)
        return self._gunicorn(more)

    def _gunicorn(self, more) -> list[str]:
        # --no-control-socket: gunicorn's control socket has one path per
        # user, which a second server would take over from the first.
        # --preload: the app is imported once in the master, its pages
        # shared by the workers (docs/benchmarks.md, "Memory").
        return [
            *(str(self.executable), "-c", "python:microcloud.gunicorn_conf", APP),
            *("--bind", f"{self.host}:{self.port}"),
            *("--workers", str(self.worker_count), "--threads", str(self.threads)),
            *("--timeout", "120", "--graceful-timeout", str(self.graceful_timeout)),
            *("--no-control-socket", "--preload"),
            *(("--access-logfile", "-") if self.access_log else ()),
            *more,
        ]

    def _granian(self, more) -> list[str]:
        # gunicorn replaces a worker that died; granian only when asked.
        return [
            *(str(self.executable), "--interface", "wsgi", "--no-ws"),
            *("--host", self.host, "--port", str(self.port)),
            *("--workers", str(self.worker_count), "--blocking-threads", str(self.threads)),
            *("--workers-kill-timeout", str(self.graceful_timeout), "--respawn-failed-workers"),
            *more,
            APP,
        ]

    def require_installed(self) -> None:
        if not self.executable.exists():
            requirements = "requirements-granian.txt" if self.name == "granian" else "requirements.txt"
            raise SettingError(f"{self.name} is not installed: {sys.executable} -m pip install -r {requirements}")

    def exec(self, *more: str) -> None:
        """Become the server."""
        self.require_installed()
        command = self.command(*more)
        os.execv(command[0], command)


def positive(name: str, raw: str) -> int | None:
    """`raw` as a whole number of at least 1; None when empty."""
    raw = raw.strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise SettingError(f"{name} must be a whole number of at least 1, got {raw!r}")
    return int(raw)


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    try:
        WebServer.from_environ().exec(*argv)
    except SettingError as error:
        print(f"microcloud: {error}", file=sys.stderr)
        return 2
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
