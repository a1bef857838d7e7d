"""Whether an expiry daemon runs, as a web node can tell: by its lease.

SQLite: the daemon that works holds an exclusive flock() on the lease file
beside the database (expiry/lease_lock.py), and the kernel drops it the
moment that process ends, however it ends. Trying the lock without waiting
says at once whether anyone holds it; if we get it, nobody did, and we let
go of it straight away (a stand-by daemon that tried in that instant takes it
from its waiting thread as soon as we do). The `expiry_lease` row is not
asked: after a SIGKILL it still names the dead holder.

PostgreSQL: daemons started with `--lease on` (the image's `expiry` role)
renew a row every ttl/2 (expiry/lease.py), so the row's expires_at in the
future means a daemon renewed it within the ttl; a clean stop lets it lapse
at once, a crash within the ttl. Daemons with `--lease off` keep no row and
cannot be seen from here: /readyz then reports the daemon missing.
"""

import fcntl
import os
from datetime import datetime
from pathlib import Path

from expiry.lease_lock import lock_path, open_lock_file
from expiry.models import Lease

LEASE_NAME = "runexpiry"


def expiry_daemon(now: datetime) -> dict:
    path = lock_path(name=LEASE_NAME)
    if path is not None:
        return {"ok": lock_is_held(path), "lease": "lock"}
    until = (
        Lease.objects.filter(name=LEASE_NAME, expires_at__gt=now)
        .order_by()
        .values_list("expires_at", flat=True)
        .first()
    )
    found = {"ok": until is not None, "lease": "row"}
    if until is not None:
        found["lease_expires_at"] = until.isoformat()
    return found


def lock_is_held(path: Path) -> bool:
    """Whether another process holds the lease lock on `path` now."""
    fd = open_lock_file(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # our only descriptor of it: a lock we got goes with it
    return False
