"""Both rate-limit backends for tests: the machine-wide SQLite file and the
real Redis on 127.0.0.1:6379 (skipped with a message when none answers,
except with CI=true, where it must)."""

import os
import uuid

import pytest

REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def redis_reachable() -> str | None:
    """None if Redis answers, else why not."""
    import redis

    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping()
    except redis.RedisError as exc:
        return str(exc)
    return None


def require_redis() -> None:
    problem = redis_reachable()
    if problem is None:
        return
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"Redis at {REDIS_URL} is unreachable and CI=true requires it: {problem}")
    pytest.skip(f"no Redis at {REDIS_URL} ({problem}); start one or set TEST_REDIS_URL to run this")


@pytest.fixture(params=["sqlite", "redis"])
def backend(request, settings):
    """Point the limits at one backend; a Redis run gets a key prefix of its own."""
    from ratelimit.counters import reset_shared_counters

    if request.param == "redis":
        require_redis()
        settings.CACHES = {
            "default": {
                "BACKEND": "django.core.cache.backends.redis.RedisCache",
                "LOCATION": REDIS_URL,
                "KEY_PREFIX": f"test-{uuid.uuid4().hex}",
            }
        }
    reset_shared_counters()
    yield request.param
    reset_shared_counters()


def allowed_in_processes(settings, backend: str, child: str, *args: str, processes: int = 3) -> list[int]:
    """Run `child` (Python printing how many hits it was allowed) in
    `processes` processes at once against `backend`'s counters, with `args`;
    return what each printed."""
    import subprocess
    import sys

    from tests.helpers import REPO_ROOT, subprocess_env

    env = {"RATELIMIT_SQLITE_PATH": str(settings.RATELIMIT_SQLITE_PATH)}
    if backend == "redis":
        env["REDIS_URL"] = REDIS_URL
    children = [
        subprocess.Popen(
            [sys.executable, "-c", child, *args],
            cwd=REPO_ROOT,
            env=subprocess_env(**env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(processes)
    ]
    printed = []
    for child in children:
        out, err = child.communicate(timeout=60)
        if child.returncode != 0:  # name the child's error, not the empty output it left
            pytest.fail(f"a child process failed (exit {child.returncode}):\n{err[-3000:]}")
        printed.append(int(out))
    return printed
