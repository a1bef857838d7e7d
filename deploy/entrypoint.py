"""The container's entrypoint: `python -m deploy.entrypoint ROLE [ARGS]`.

ROLE is what the container runs, after the start-up below:
- `serve`: the web server (gunicorn, or granian if WEB_SERVER says so, as
  `make run` starts it: deploy/web_servers.py);
- `expiry`: the expiry daemon (`manage.py runexpiry --lease on`);
- `all` (the default): both side by side (microcloud/serve.py, as `make run`),
  for an install of one container;
- anything else is a `manage.py` command line (`backup /data/backups/today`,
  `createsuperuser`, `shell`), run without the start-up's migrations.

Start-up: the state lives in DATA_DIR (/data, the image's volume). Without
SECRET_KEY or SECRET_KEY_FILE a random key is made there once
(`secret_key`, readable by the service's user only) and kept across
restarts and upgrades, as `make run` keeps var/secret_key. Then `manage.py
prepare` applies the migrations under a lock (deploy/backends), so
containers started together migrate once, and creates the first admin user.
Last the role's program replaces this process, so it is the container's
PID 1 and receives `podman stop`'s SIGTERM itself: gunicorn, runexpiry and
microcloud/serve.py each stop gracefully on it and exit 0.

Only the standard library here: settings must not load before the key exists.
"""

import contextlib
import os
import secrets
import signal
import subprocess
import sys
from pathlib import Path

from deploy.web_servers import SettingError, WebServer

ROLES = ("serve", "expiry", "all")
# Under podman's and docker's default grace of 10 s before SIGKILL: requests
# in flight get this long to finish once SIGTERM arrives.
GRACEFUL_TIMEOUT = 8


class StartError(Exception):
    """A setting or the volume is not usable: said on stderr, exit 2."""


def main(argv: list[str]) -> int:
    os.umask(0o077)  # the database, key and files: the service's user only
    role, rest = (argv[0], argv[1:]) if argv else ("all", [])
    try:
        data = Path(os.environ.get("DATA_DIR", "/data"))
        ensure_secret_key(data)
        if role not in ROLES:
            os.execv(sys.executable, [sys.executable, "manage.py", role, *rest])
        command = role_command(role, rest)
    except (StartError, SettingError) as error:
        print(f"microcloud: {error}", file=sys.stderr)
        return 2
    status = run_to_the_end([sys.executable, "manage.py", "prepare"])
    if status is not None:
        return status
    print(f"microcloud: starting {role}: {' '.join(command)}", file=sys.stderr, flush=True)
    os.execv(command[0], command)
    return 0  # not reached


def ensure_secret_key(data: Path) -> None:
    """Without SECRET_KEY or SECRET_KEY_FILE, point SECRET_KEY_FILE at
    DATA_DIR/secret_key, made once: the first of several containers starting
    together writes it, the others read that one."""
    if os.environ.get("SECRET_KEY", "").strip() or "SECRET_KEY_FILE" in os.environ:
        return
    path = data / "secret_key"
    if not path.exists():
        scratch = data / f".secret_key.{os.getpid()}"
        try:
            scratch.write_text(secrets.token_urlsafe(50) + "\n")
            with contextlib.suppress(FileExistsError):  # another container's is the one
                os.link(scratch, path)
            scratch.unlink()
        except OSError as error:
            raise StartError(
                f"cannot write the secret key into {data} ({error.strerror}): the volume must be writable "
                f"by uid {os.getuid()}, or set SECRET_KEY"
            ) from None
    os.environ["SECRET_KEY_FILE"] = str(path)


def role_command(role: str, rest: list[str]) -> list[str]:
    if role == "expiry":
        # --lease on: on PostgreSQL too, so the web nodes' /readyz can see a
        # daemon by its renewed lease (on SQLite the lease is a lock either way).
        return [sys.executable, "manage.py", "runexpiry", "--lease", "on", *rest]
    web = web_command(rest)
    if role == "serve":
        return web
    return [sys.executable, "-m", "microcloud.serve", "--", *web]


def web_command(rest: list[str]) -> list[str]:
    """The web server as `make run` starts it (WEB_SERVER, gunicorn unless it
    says granian), on HOST:PORT (0.0.0.0:8000), its access log on stdout."""
    server = WebServer.from_environ(host="0.0.0.0", port=8000, graceful_timeout=GRACEFUL_TIMEOUT, access_log=True)
    server.require_installed()
    return server.command(*rest)


def run_to_the_end(command: list[str]) -> int | None:
    """Run `command`; None when it succeeded, else the status to exit with.

    SIGTERM or SIGINT meanwhile is passed on to it and ends the start-up:
    as PID 1 this process would otherwise ignore them."""
    child = subprocess.Popen(command)
    stopped = []

    def pass_on(signum, frame):
        stopped.append(signum)
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signum)

    previous = {sig: signal.signal(sig, pass_on) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        status = child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if stopped:
        return 128 + stopped[0]
    if status != 0:
        print(f"microcloud: {' '.join(command[1:])} failed (status {status})", file=sys.stderr)
        return 1
    return None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
