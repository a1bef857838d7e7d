"""What /readyz asks, each answer a small dict with "ok" and nothing secret.

A check that fails says what failed and the error's class, never its
message: a database's or bucket's error names hosts, users and paths.
"""

import functools
import time
from collections.abc import Callable

from django.db import connection
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder
from django.utils import timezone

from health.daemon import expiry_daemon
from storage.store import files

# The storage check asks about a name no file ever has (stored names are
# random under a folder): a bucket answers with one HEAD request.
PROBE_NAME = "readyz-probe"
# /readyz is public (a load balancer has no credentials): one process checks
# at most once a second, so polling it costs the database and the bucket
# little whoever polls.
FRESH_FOR = 1.0


def database() -> dict:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return {"ok": True}


@functools.cache
def known_migrations() -> frozenset[tuple[str, str]]:
    """Every migration of the code this process runs (read from disk once)."""
    return frozenset(MigrationLoader(None, ignore_no_migrations=True).graph.nodes)


def migrations() -> dict:
    applied = MigrationRecorder(connection).applied_migrations()
    unapplied = len(known_migrations() - set(applied))
    return {"ok": unapplied == 0, "unapplied": unapplied}


def storage() -> dict:
    files().exists(PROBE_NAME)  # raises when the store is out of reach
    return {"ok": True}


def expiry() -> dict:
    return expiry_daemon(timezone.now())


CHECKS: dict[str, Callable[[], dict]] = {
    "database": database,
    "migrations": migrations,
    "storage": storage,
    "expiry": expiry,
}


def run_checks() -> dict[str, dict]:
    results = {}
    for name, check in CHECKS.items():
        try:
            results[name] = check()
        except Exception as error:  # a readiness answer, never a 500
            results[name] = {"ok": False, "error": type(error).__name__}
    return results


class Readiness:
    """The last answer, kept FRESH_FOR seconds (clock injected for tests)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, fresh_for: float = FRESH_FOR):
        self.clock = clock
        self.fresh_for = fresh_for
        self.last: tuple[float, dict] | None = None

    def answer(self) -> dict:
        now = self.clock()
        last = self.last
        if last is not None and now - last[0] < self.fresh_for:
            return last[1]
        results = run_checks()
        answer = {"status": "ready" if all(r["ok"] for r in results.values()) else "not ready", "checks": results}
        self.last = (now, answer)
        return answer


readiness = Readiness()
