"""`make run`'s set-up (the migrate target) leaves var/ to the service's user
alone: the folder 0700, the database (API tokens) and the secret key 0600."""

import contextlib
import fcntl
import os
import pty
import shutil
import signal
import stat
import subprocess
import sys
import termios
import threading
import urllib.request
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT, free_port, wait_until

NEEDS_MAKE = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def make_migrate(tmp_path: Path) -> subprocess.CompletedProcess:
    venv = Path(sys.executable).parent.parent
    # The test run's own key and database must not stand in for make's.
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "SECRET_KEY", "SECRET_KEY_FILE"}}
    env.update(SQLITE_PATH=str(tmp_path / "var" / "db.sqlite3"), STATIC_ROOT=str(tmp_path / "static"))
    # -o: the test's virtualenv is already installed; never reinstall it here.
    command = ["make", "--no-print-directory", "-o", f"{venv}/.runtime", "migrate"]
    return subprocess.run(
        [*command, f"VAR={tmp_path / 'var'}", f"VENV={venv}"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        # As a developer's shell usually is: what make creates must not depend on it.
        preexec_fn=lambda: os.umask(0o022),
    )


@NEEDS_MAKE
def test_make_migrate_creates_var_0700_with_the_database_and_key_0600(tmp_path):
    result = make_migrate(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    var = tmp_path / "var"
    assert mode(var) == 0o700
    assert mode(var / "db.sqlite3") == 0o600
    assert mode(var / "secret_key") == 0o600
    assert len((var / "secret_key").read_text().strip()) >= 50


@NEEDS_MAKE
def test_make_migrate_tightens_a_var_folder_left_open_by_an_older_checkout(tmp_path):
    var = tmp_path / "var"
    var.mkdir()
    var.chmod(0o755)
    (var / "secret_key").write_text("k" * 50 + "\n")
    result = make_migrate(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert mode(var) == 0o700


@NEEDS_MAKE
@pytest.mark.fault
def test_make_run_says_where_to_open_it_and_who_can_sign_in(tmp_path):
    venv = Path(sys.executable).parent.parent
    port = free_port()
    # Both up (gunicorn with --preload installs its signal handlers only once it has loaded the app).
    run, text = make_run_until_up(tmp_path, port, ("lease runexpiry acquired", "Booting worker with pid"))
    # Both stop gracefully, and the recipe succeeds: make reports no error (a
    # SIGINT sent to make's group reaches make itself, which then dies by it,
    # as GNU make always does; from a terminal it does not: see below).
    assert "Shutting down: Master" in text
    assert "runexpiry stopped after" in text
    assert "make: ***" not in text, text[-2000:]
    assert run.returncode == -signal.SIGINT
    said = next(line for line in text.splitlines() if line.startswith("Serving"))
    assert said == (
        f"Serving http://127.0.0.1:{port}/ (the web app), /admin/ (admin users: none yet: "
        f"{venv}/bin/python manage.py createsuperuser) and /api/docs/. Ctrl-C stops it."
    )


@NEEDS_MAKE
@pytest.mark.fault
def test_make_run_web_server_granian_serves_under_granian_and_stops_with_the_daemon(tmp_path):
    venv = Path(sys.executable).parent.parent
    port = free_port()
    up = ("lease runexpiry acquired", f"Listening at: http://127.0.0.1:{port}", "Started worker-1")
    extra = ["-o", f"{venv}/.granian", "WEB_SERVER=granian", "WEB_WORKERS=1"]
    run, text = make_run_until_up(tmp_path, port, up, extra, check=f"http://127.0.0.1:{port}/healthz")
    assert run.returncode == -signal.SIGINT
    assert "Granian shutdown completed" in text
    assert "runexpiry stopped after" in text
    assert "make: ***" not in text, text[-2000:]


def make_run_until_up(
    tmp_path: Path, port: int, up: tuple[str, ...], extra: list[str] = (), check: str | None = None
) -> tuple[subprocess.Popen, str]:
    """`make run` (with `extra` arguments) until its output holds every line of
    `up` (and `check` answers 200), then a terminal's Ctrl-C to its group;
    the ended process and its output."""
    command, env = make_run_env(tmp_path, port)
    output = tmp_path / "run.txt"
    run = start_make_run([*command, *extra], env, output)
    try:
        assert wait_until(lambda: all(line in output.read_text() for line in up), 120), output.read_text()[-2000:]
        if check:
            with urllib.request.urlopen(check, timeout=30) as response:
                assert response.status == 200
    finally:
        os.killpg(run.pid, signal.SIGINT)
        run.wait(60)
    return run, output.read_text()


def start_make_run(command: list[str], env: dict, output: Path) -> subprocess.Popen:
    """`make run` in the background, its output into `output`, in a process
    group of its own: stopped as a terminal's Ctrl-C would (SIGINT to the group)."""
    with output.open("w") as out:
        return subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            # A shell started in the background may hand SIGINT down ignored; a terminal does not.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )


def make_run_env(tmp_path: Path, port: int | None = None) -> tuple[list[str], dict]:
    """`make run` on a var/ and static/ of the test's own, and its environment."""
    venv = Path(sys.executable).parent.parent
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "SECRET_KEY", "SECRET_KEY_FILE"}}
    env.update(SQLITE_PATH=str(tmp_path / "var" / "db.sqlite3"), STATIC_ROOT=str(tmp_path / "static"))
    command = ["make", "--no-print-directory", "-o", f"{venv}/.runtime", "run"]
    return [*command, f"VAR={tmp_path / 'var'}", f"VENV={venv}", f"PORT={port or free_port()}"], env


def in_a_terminal(tty: int) -> None:
    """The child's own session, with the pseudo-terminal as its controlling
    terminal (so make is its foreground group, as in a shell), SIGINT default."""
    fcntl.ioctl(tty, termios.TIOCSCTTY, 0)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@NEEDS_MAKE
@pytest.mark.fault
def test_ctrl_c_in_a_terminal_stops_make_run_with_status_0(tmp_path):
    command, env = make_run_env(tmp_path)
    master, tty = pty.openpty()
    run = subprocess.Popen(
        command,
        cwd=REPO_ROOT,
        env=env,
        stdin=tty,
        stdout=tty,
        stderr=tty,
        start_new_session=True,
        preexec_fn=lambda: in_a_terminal(0),
    )
    os.close(tty)
    seen = bytearray()

    def read_all() -> None:
        with contextlib.suppress(OSError):  # EIO once every writer has gone
            while chunk := os.read(master, 65536):
                seen.extend(chunk)

    reader = threading.Thread(target=read_all, daemon=True)
    reader.start()
    try:
        up = (b"lease runexpiry acquired", b"Booting worker with pid")
        assert wait_until(lambda: all(line in seen for line in up), 120), bytes(seen[-2000:])
        os.write(master, b"\x03")  # Ctrl-C: the terminal sends SIGINT to its foreground group
        assert run.wait(60) == 0, bytes(seen[-2000:])
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
        reader.join(10)
        os.close(master)
    text = seen.decode(errors="replace")
    assert "Shutting down: Master" in text
    assert "runexpiry stopped after" in text
    assert "make: ***" not in text


@pytest.mark.fault
def test_a_web_server_that_cannot_start_stops_the_daemon_and_fails_the_run(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "SECRET_KEY", "SECRET_KEY_FILE"}}
    env.update(DEBUG="true", SQLITE_PATH=str(tmp_path / "db.sqlite3"))
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=REPO_ROOT, env=env, check=True)
    web = [sys.executable, "-c", "import sys; print('port taken', file=sys.stderr); sys.exit(3)"]
    done = subprocess.run(
        [sys.executable, "-m", "microcloud.serve", "--", *web],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3
    assert "ended (status 3); stopping the rest" in done.stderr  # and it waited for the daemon to end
