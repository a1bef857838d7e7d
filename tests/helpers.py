"""Helpers for tests that start the project's own processes."""

import os
import subprocess
import sys
from pathlib import Path

from django.db import connection

REPO_ROOT = Path(__file__).resolve().parent.parent


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


def start_manage(*args: str, **env: str) -> subprocess.Popen:
    """Start `manage.py <args>` against the test database."""
    return subprocess.Popen(
        [sys.executable, "manage.py", *args],
        cwd=REPO_ROOT,
        env=subprocess_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def stop(process: subprocess.Popen, timeout: float = 10) -> tuple[str, str]:
    """Make sure `process` is gone; return its output."""
    if process.poll() is None:
        process.terminate()
    try:
        return process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.communicate()
