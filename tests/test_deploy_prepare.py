"""The container's start-up: several processes starting together migrate a
new database once, under the lock (deploy/backends), and make the first
admin once; the secret key is made once into the state volume."""

import os
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest
from django.db import connection

from deploy import entrypoint
from tests.helpers import REPO_ROOT, subprocess_env

STARTING_TOGETHER = 4


@pytest.fixture(autouse=True)
def umask_kept():
    """entrypoint.main() sets the service's umask: not for the rest of the tests."""
    before = os.umask(0o022)
    os.umask(before)
    yield
    os.umask(before)


@pytest.fixture
def new_database(tmp_path, db):
    """The URL of a database nobody has migrated yet, of the tests' kind."""
    if connection.vendor == "sqlite":
        yield f"sqlite:///{tmp_path / 'new.sqlite3'}"
        return
    name = f"test_prepare_{uuid.uuid4().hex[:12]}"
    cfg = connection.settings_dict
    admin = f"host={cfg['HOST'] or 'localhost'} port={cfg['PORT'] or 5432} user={cfg['USER']} dbname=postgres"
    with psycopg.connect(admin, autocommit=True) as pg:
        pg.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgres://{cfg['USER']}@{cfg['HOST'] or 'localhost'}:{cfg['PORT'] or 5432}/{name}"
    finally:
        with psycopg.connect(admin, autocommit=True) as pg:
            pg.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def test_processes_starting_together_migrate_once_and_make_one_admin(new_database, tmp_path):
    env = subprocess_env(
        DATABASE_URL=new_database,
        DJANGO_SUPERUSER_USERNAME="admin",
        DJANGO_SUPERUSER_PASSWORD="change-me-now-1",
        RATELIMIT_SQLITE_PATH=str(tmp_path / "ratelimit.sqlite3"),
    )
    starts = [
        subprocess.Popen(
            [sys.executable, "manage.py", "prepare"],
            cwd=REPO_ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(STARTING_TOGETHER)
    ]
    outputs = [start.communicate(timeout=240)[0] for start in starts]
    assert [start.returncode for start in starts] == [0] * STARTING_TOGETHER, "\n---\n".join(outputs)
    # One applied the migrations; the others found none left to apply.
    assert sum("Applying sharing.0001" in output for output in outputs) == 1, outputs
    assert sum("Created admin user admin." in output for output in outputs) == 1, outputs
    assert sum("Admin user admin exists." in output for output in outputs) == STARTING_TOGETHER - 1


@pytest.fixture
def data(tmp_path) -> Path:
    """An empty state volume."""
    (tmp_path / "data").mkdir()
    return tmp_path / "data"


def test_the_secret_key_is_made_once_and_kept(data, monkeypatch):
    monkeypatch.delenv("SECRET_KEY", raising=False)
    monkeypatch.delenv("SECRET_KEY_FILE", raising=False)
    entrypoint.ensure_secret_key(data)
    key_file = data / "secret_key"
    first = key_file.read_text()
    assert len(first.strip()) >= 50
    assert os.environ["SECRET_KEY_FILE"] == str(key_file)
    monkeypatch.delenv("SECRET_KEY_FILE")
    entrypoint.ensure_secret_key(data)
    assert key_file.read_text() == first
    assert sorted(path.name for path in data.iterdir()) == ["secret_key"]


def test_a_given_key_is_used_and_nothing_is_written(data, monkeypatch):
    monkeypatch.setenv("SECRET_KEY", "given-" * 10)
    monkeypatch.delenv("SECRET_KEY_FILE", raising=False)
    entrypoint.ensure_secret_key(data)
    assert list(data.iterdir()) == []
    assert "SECRET_KEY_FILE" not in os.environ


@pytest.mark.parametrize("port", ["0", "80a", "-1"])
def test_a_bad_port_stops_the_start_with_its_name(tmp_path, port, capsys, monkeypatch):
    monkeypatch.setenv("DATA_DIR", str(tmp_path))
    monkeypatch.setenv("PORT", port)
    assert entrypoint.main(["serve"]) == 2
    assert f"PORT must be a whole number of at least 1, got '{port}'" in capsys.readouterr().err


def test_an_unwritable_volume_is_said_plainly(tmp_path, capsys, monkeypatch):
    if os.getuid() == 0:
        pytest.skip("root writes anywhere")
    locked = Path(tmp_path / "data")
    locked.mkdir(mode=0o500)
    monkeypatch.delenv("SECRET_KEY", raising=False)
    monkeypatch.delenv("SECRET_KEY_FILE", raising=False)
    monkeypatch.setenv("DATA_DIR", str(locked))
    assert entrypoint.main(["serve"]) == 2
    assert "the volume must be writable" in capsys.readouterr().err


def test_each_role_runs_what_make_run_runs(monkeypatch):
    monkeypatch.setenv("PORT", "8123")
    monkeypatch.setenv("WEB_WORKERS", "3")
    serve = entrypoint.role_command("serve", [])
    assert serve[0].endswith("gunicorn")
    assert "0.0.0.0:8123" in serve
    assert serve[serve.index("--workers") + 1] == "3"
    assert entrypoint.role_command("expiry", [])[1:] == ["manage.py", "runexpiry", "--lease", "on"]
    assert entrypoint.role_command("all", [])[1:4] == ["-m", "microcloud.serve", "--"]
