"""Helpers for tests that start the project's own processes."""

import contextlib
import ctypes
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import psycopg
from django.conf import settings
from django.db import connection, connections, transaction
from django.db.models import F
from django.utils import timezone

from expiry.watchers import conninfo_for
from sharing.models import Share, ShareItem

REPO_ROOT = Path(__file__).resolve().parent.parent

# The fields of a share in every API response, in the schema's order.
SHARE_FIELDS = [
    "id",
    "file",
    "files",
    "size",
    "token",
    "url",
    "created_at",
    "expires_at",
    "status",
    "ended_at",
    "end_reason",
    "download_count",
    "max_downloads",
    "downloads_left",
    "has_password",
    "message",
    "lateness_ms",
    "notify_first_download",
    "remind_before_expiry",
]
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def database_url() -> str:
    """The URL of the database the running tests use, for a subprocess."""
    cfg = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{cfg['NAME']}"
    auth = cfg["USER"] or ""
    if cfg.get("PASSWORD"):
        auth += f":{cfg['PASSWORD']}"
    host = f"{cfg['HOST'] or 'localhost'}:{cfg['PORT'] or 5432}"
    return f"postgres://{auth}@{host}/{cfg['NAME']}"


def subprocess_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(DATABASE_URL=database_url(), DJANGO_SETTINGS_MODULE="microcloud.settings", PYTHONUNBUFFERED="1")
    env.update(extra)
    return env


def storage_env(media_root) -> dict[str, str]:
    """The environment that puts a child process's file bytes where this
    test's are: its MEDIA_ROOT, and its bucket when it has one."""
    return {"MEDIA_ROOT": str(media_root), "STORAGE_URL": settings.STORAGE_URL}


def stored_names(folder: str = "") -> list[str]:
    """Every name the default storage (disk or bucket) holds under `folder`."""
    from django.core.files.storage import storages

    storage = storages["default"]
    try:
        folders, files = storage.listdir(folder)
    except FileNotFoundError:  # a disk folder never made
        return []
    names = [f"{folder}/{name}".lstrip("/") for name in files]
    for sub in folders:
        names += stored_names(f"{folder}/{sub}".lstrip("/"))
    return sorted(names)


def run_manage(*args: str, cwd: Path = REPO_ROOT, drop: set[str] = frozenset(), **env: str):
    """Run `manage.py <args>` to completion with the caller's environment less
    `drop` (and SECRET_KEY, SECRET_KEY_FILE, DEBUG: the settings under test
    must not see a developer's), plus `env`; return the CompletedProcess."""
    removed = {"SECRET_KEY", "SECRET_KEY_FILE", "DEBUG", *drop}
    base = {key: value for key, value in os.environ.items() if key not in removed}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=cwd,
        env={**base, "DJANGO_SETTINGS_MODULE": "microcloud.settings", **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def start_manage(*args: str, output: Path | None = None, **env: str) -> subprocess.Popen:
    """Start `manage.py <args>` against the test database.

    Output goes to pipes, or with `output` to that file (stderr merged): a
    long-running process that logs a lot must not fill a pipe nobody reads.
    """
    return start([sys.executable, "manage.py", *args], output=output, **env)


def start(command: list[str], *, output: Path | None = None, **env: str) -> subprocess.Popen:
    options = {"cwd": REPO_ROOT, "env": subprocess_env(**env), "preexec_fn": _in_the_child}
    if output is None:
        return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **options)
    with open(output, "ab") as sink:  # the child keeps its own descriptor
        return subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, **options)


def _in_the_child() -> None:
    _die_with_parent()
    # A test run started in the background (a script's `&`, nohup) hands
    # SIGINT down ignored; the tests stop children with it as a terminal's
    # Ctrl-C would, so it must reach them.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _die_with_parent() -> None:
    """In the child: get SIGTERM when the test process dies, even by SIGKILL,
    so no daemon or server outlives a killed test run (Linux only)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def stop(process: subprocess.Popen, timeout: float = 10) -> tuple[str, str]:
    """Make sure `process` is gone; return its output."""
    if process.poll() is None:
        process.terminate()
    try:
        return process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.communicate()


def kill(process: subprocess.Popen) -> None:
    """SIGKILL `process` (no clean-up runs in it) and reap it."""
    if process.poll() is None:
        process.send_signal(signal.SIGKILL)
    process.wait(10)


def wait_until(predicate, timeout: float, interval: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


def wait_for_text(path: Path, text: str, timeout: float, *, process: subprocess.Popen | None = None) -> float:
    """Wait until the file at `path` contains `text`; return when (time.time()).

    Fail at once, with the file's content, if `process` exits first.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        content = path.read_text(errors="replace") if path.exists() else ""
        if text in content:
            return time.time()
        if process is not None and process.poll() is not None:
            raise AssertionError(f"process exited ({process.returncode}) before {text!r}:\n{content}")
        time.sleep(0.01)
    raise AssertionError(f"{text!r} not seen in {path} within {timeout} s:\n{path.read_text(errors='replace')}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_web(
    port: int, output: Path, *, workers: int = 2, threads: int = 4, args: tuple[str, ...] = (), **env: str
) -> subprocess.Popen:
    """Start gunicorn (as deployed, see docs/deployment.md) on 127.0.0.1:`port`;
    `args` are more gunicorn options."""
    gunicorn = str(Path(sys.executable).with_name("gunicorn"))
    command = [gunicorn, "-c", "python:microcloud.gunicorn_conf", "microcloud.wsgi:application"]
    # --no-control-socket: gunicorn 27's control socket has one path per user,
    # which each server takes over (and removes) from the one beside it.
    command += ["--bind", f"127.0.0.1:{port}", "--access-logfile", "-", "--no-control-socket"]
    command += ["--workers", str(workers), "--threads", str(threads), "--graceful-timeout", "3", *args]
    # Its own rate-limit counters: requests of other tests must not count here.
    env.setdefault("RATELIMIT_SQLITE_PATH", str(output.with_suffix(".ratelimit.sqlite3")))
    # Load tests send every request from 127.0.0.1; tests of the limit set it.
    env.setdefault("LINK_RATE_LIMIT", "1000000000")
    return start(command, output=output, DEBUG="false", **env)


@contextlib.contextmanager
def web_nodes(tmp_path: Path, media_root: str, **env: str):
    """Start the web servers of a multi-process test on its database and
    yield their ports: 4 workers x 4 threads on SQLite (one machine); on
    PostgreSQL two servers of 2 workers x 4 threads (two nodes). `env`: more
    settings for them."""
    layout = [4] if connection.vendor == "sqlite" else [2, 2]
    started = []
    try:
        for n, workers in enumerate(layout):
            port = free_port()
            log = tmp_path / f"web{n}.log"
            started.append((port, start_web(port, log, workers=workers, threads=4, MEDIA_ROOT=media_root, **env)))
        for port, server in started:
            wait_for_port(port, 30, server)
        yield [port for port, _ in started]
    finally:
        for _, server in started:
            stop(server)


def wait_for_port(port: int, timeout: float, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise AssertionError(f"server exited ({process.returncode}) before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listening on {port} after {timeout} s")


def report(capsys, title: str, **figures) -> None:
    """Print measured figures to the terminal even while pytest captures output."""
    with capsys.disabled():
        print(f"\n[figures] {title}: " + ", ".join(f"{name}={value}" for name, value in figures.items()), flush=True)


def hold(shares: list[Share], stored_file) -> list[Share]:
    """Make each of `shares` (inserted in bulk, so without Share.create_for)
    hold `stored_file` as its one file; return them."""
    ShareItem.objects.bulk_create(
        (ShareItem(share_id=share.pk, file_id=stored_file.pk, position=1) for share in shares), batch_size=5000
    )
    return shares


def bulk_shares(stored_file, offsets: list[float], start_in: float) -> list[int]:
    """Create active shares due `start_in` + offset seconds from when they
    are all in place (no signals, no NOTIFY); return their ids.

    Inserting 50,000 rows takes several seconds on this machine, so they are
    created far in the future, then moved to their deadlines in one UPDATE.
    """
    now = timezone.now()
    parked = now + timedelta(days=1)
    shares = (
        Share(
            owner=stored_file.owner,
            size=stored_file.size,
            least=stored_file.size,
            created_at=now,
            updated_at=now,
            expires_at=parked + timedelta(seconds=offset),
        )
        for offset in offsets
    )
    with transaction.atomic():
        ids = [share.pk for share in hold(Share.objects.bulk_create(shares, batch_size=5000), stored_file)]
    # A range, not `pk IN (50,000 ids)`: some SQLite builds allow 32766 parameters.
    Share.objects.filter(pk__range=(min(ids), max(ids)), expires_at__gte=parked).update(
        expires_at=F("expires_at") - (parked - timezone.now()) + timedelta(seconds=start_in)
    )
    return ids


def create_share(stored_file, seconds: float) -> Share:
    """A share of `stored_file` due `seconds` from now, made the app's way."""
    return Share.create_for(file=stored_file, expires_at=timezone.now() + timedelta(seconds=seconds))


def in_threads(work, workers: int = 1, *, numbered: bool = False) -> list:
    """Run `work` in `workers` threads released together; return their results.

    Each thread has its own database connection, as another process would;
    each closes it when done. `numbered`: work(n) gets the thread's number,
    the index of its result.
    """
    results = [None] * workers
    barrier = threading.Barrier(workers)

    def run(n: int) -> None:
        try:
            barrier.wait(5)
            results[n] = work(n) if numbered else work()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


def in_other_connection(work):
    """Run `work` on a database connection of its own; return its result."""
    return in_threads(work)[0]


class HeldLock:
    """Another client holding what a write of `share` must wait for: SQLite's
    write lock, or the share's row on PostgreSQL."""

    def __init__(self, share: Share):
        self.share = share

    def __enter__(self):
        if connection.vendor == "sqlite":
            self.conn = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None)
            self.conn.execute("BEGIN IMMEDIATE")
        else:
            self.conn = psycopg.connect(conninfo_for("default"))
            self.conn.execute("SELECT id FROM sharing_share WHERE id = %s FOR UPDATE", [self.share.pk])
        return self

    def __exit__(self, *exc):
        self.conn.commit() if connection.vendor != "sqlite" else self.conn.execute("COMMIT")
        self.conn.close()
