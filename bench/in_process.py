"""A scratch database and Django, for the probes that run the daemon's parts
in this process (bench.cost_probe, bench.window_probe).

`scratch_django` fills a template with the project's schema and one active
share per deadline, points Django at a probe database beside it (each
measurement copies the template there first, see `fresh_copy`), sets Django
up, and removes everything at the end, whatever happens.
"""

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from bench.db import Databases, fill


@contextlib.contextmanager
def scratch_django(name: str, deadlines: Iterable[float]) -> Iterator[Path]:
    """Yield the path of a template holding a share due at each of `deadlines`."""
    workdir = Path(tempfile.mkdtemp(prefix=f"bench-{name}-"))
    try:
        dbs = Databases(workdir)
        dbs.prepare()
        template = dbs.fresh(f"{name}-template")
        fill(template, dbs.owner_id, deadlines, created_at=time.time())
        os.environ.update(SQLITE_PATH=str(workdir / "probe.sqlite3"), LOG_LEVEL="WARNING")
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "microcloud.settings")
        os.environ.setdefault("SECRET_KEY", "bench-only-secret-key-for-throwaway-databases")
        import django

        django.setup()
        yield template
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def fresh_copy(template: Path) -> None:
    """Replace Django's probe database with a copy of `template`."""
    from django.db import connection

    connection.close()
    db = Path(connection.settings_dict["NAME"])
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(template, db)
