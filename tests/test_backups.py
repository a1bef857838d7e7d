"""manage.py backup and restore: a backup taken while uploads stream in
(through gunicorn) restores, into an empty state, to one where every file
the database lists has its bytes, of its size and sha256; a state in use is
never restored over."""

import hashlib
import http.client
import json
import os
import sqlite3
import threading
import uuid

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from backups.manifest import Manifest, safe_path
from sharing.models import StoredFile
from tests.helpers import free_port, run_manage, start_web, stop, wait_for_port, wait_until
from tokens.service import issue

UPLOADERS = 3
KEY = "test-only-secret-key-for-the-restored-state-0123456789"


def upload(port: int, token: str, data: bytes) -> int:
    boundary = uuid.uuid4().hex
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="part.bin"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        + data
        + f"\r\n--{boundary}--\r\n".encode()
    )
    client = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        headers = {"Content-Type": f"multipart/form-data; boundary={boundary}", "Authorization": f"Token {token}"}
        client.request("POST", "/api/files/", body, headers)
        response = client.getresponse()
        content = response.read()
    finally:
        client.close()
    assert response.status == 201, content
    return json.loads(content)["id"]


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def uploads_streaming(alice, tmp_path, media_root):
    """gunicorn on the test database, and uploaders sending files to it
    until the test is done; yields the ids uploaded so far (a live list)."""
    token = issue(alice, name="test")[1]
    port = free_port()
    server = start_web(port, tmp_path / "web.log", MEDIA_ROOT=str(media_root))
    uploaded: list[int] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def send(seed: int) -> None:
        n = 0
        while not done.is_set():
            n += 1
            try:
                uploaded.append(upload(port, token, os.urandom(1000 * (seed + 1) + 97 * n)))
            except BaseException as error:  # shown by the test, not lost in a thread
                errors.append(error)
                return

    threads = [threading.Thread(target=send, args=(seed,)) for seed in range(UPLOADERS)]
    try:
        wait_for_port(port, 30, server)
        for thread in threads:
            thread.start()
        yield uploaded
    finally:
        done.set()
        for thread in threads:
            if thread.ident:
                thread.join(60)
        stop(server)
    assert errors == []


@pytest.mark.django_db(transaction=True)
def test_a_backup_taken_during_uploads_restores_every_file_with_its_bytes(uploads_streaming, tmp_path):
    if connection.vendor != "sqlite":
        pytest.skip("PostgreSQL's database is backed up with pg_dump (docs/deployment.md)")
    backup = tmp_path / "backup"
    assert wait_until(lambda: len(uploads_streaming) >= 6, timeout=60)
    call_command("backup", str(backup), "--files")
    at_backup = len(uploads_streaming)
    assert wait_until(lambda: len(uploads_streaming) >= at_backup + 6, timeout=60)  # still streaming

    manifest = Manifest.read(backup)
    assert manifest.database == "db.sqlite3"
    assert {entry.bytes for entry in manifest.entries} == {"copied"}

    state = tmp_path / "restored"
    state.mkdir()
    env = {
        "DATABASE_URL": f"sqlite:///{state / 'db.sqlite3'}",
        "MEDIA_ROOT": str(state / "files"),
        "RATELIMIT_SQLITE_PATH": str(state / "ratelimit.sqlite3"),
        "SECRET_KEY": KEY,
    }
    restored = run_manage("restore", str(backup), **env)
    assert restored.returncode == 0, restored.stderr

    listed = sqlite3.connect(state / "db.sqlite3").execute("SELECT content, size, sha256 FROM sharing_storedfile")
    listed = listed.fetchall()
    assert 6 <= len(listed) < StoredFile.objects.count()  # taken mid-stream: later uploads are not in it
    assert sorted(name for name, _, _ in listed) == sorted(entry.name for entry in manifest.entries)
    for name, size, digest in listed:
        stored = state / "files" / name
        assert stored.stat().st_size == size, name
        assert sha256(stored) == digest, name

    # The restored state is in use now: a second restore is refused, nothing written.
    again = run_manage("restore", str(backup), **env)
    assert again.returncode != 0
    assert "the database is not empty" in again.stderr
    migrated = run_manage("migrate", "--check", **env)
    assert migrated.returncode == 0, migrated.stdout + migrated.stderr


def empty_state(tmp_path, media_root) -> dict:
    return {
        "DATABASE_URL": f"sqlite:///{tmp_path / 'state.sqlite3'}",
        "MEDIA_ROOT": str(media_root),
        "RATELIMIT_SQLITE_PATH": str(tmp_path / "state-ratelimit.sqlite3"),
        "SECRET_KEY": KEY,
    }


@pytest.mark.django_db(transaction=True)
def test_a_store_that_holds_a_file_of_the_backup_is_not_restored_over(alice, make_file, tmp_path, settings):
    if connection.vendor != "sqlite":
        pytest.skip("the database part is SQLite's")
    stored = make_file(alice, data=b"x" * 300)
    call_command("backup", str(tmp_path / "backup"), "--files")
    refused = run_manage("restore", str(tmp_path / "backup"), **empty_state(tmp_path, settings.MEDIA_ROOT))
    assert refused.returncode != 0
    assert f"the file store already holds {stored.content.name}" in refused.stderr
    tables = sqlite3.connect(tmp_path / "state.sqlite3").execute("SELECT name FROM sqlite_master").fetchall()
    assert tables == []  # nothing written


@pytest.mark.django_db(transaction=True)
def test_a_damaged_backup_is_refused_whole(alice, make_file, tmp_path):
    if connection.vendor != "sqlite":
        pytest.skip("the database part is SQLite's")
    stored = make_file(alice, data=b"y" * 300)
    call_command("backup", str(tmp_path / "backup"), "--files")
    safe_path(tmp_path / "backup", stored.content.name).write_bytes(b"z" * 300)
    refused = run_manage("restore", str(tmp_path / "backup"), **empty_state(tmp_path, tmp_path / "new-media"))
    assert refused.returncode != 0
    assert f"the backup's bytes of {stored.content.name} do not match its manifest" in refused.stderr
    tables = sqlite3.connect(tmp_path / "state.sqlite3").execute("SELECT name FROM sqlite_master").fetchall()
    assert tables == []
    assert not (tmp_path / "new-media").exists() or not any((tmp_path / "new-media").rglob("*"))


@pytest.mark.django_db(transaction=True)
def test_it_backs_up_into_a_new_folder_only(tmp_path):
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "something").write_text("kept")
    with pytest.raises(CommandError, match="is not an empty folder"):
        call_command("backup", str(tmp_path / "used"))
    assert sorted(path.name for path in (tmp_path / "used").iterdir()) == ["something"]


@pytest.mark.django_db(transaction=True)
def test_the_manifest_lists_every_file_with_size_and_sha256(alice, make_file, tmp_path):
    made = [make_file(alice, name=f"{n}.txt", data=f"file {n}\n".encode() * (n + 1)) for n in range(3)]
    call_command("backup", str(tmp_path / "b"))
    manifest = Manifest.read(tmp_path / "b")
    assert sorted((e.name, e.size, e.sha256, e.bytes) for e in manifest.entries) == sorted(
        (f.content.name, f.size, f.sha256, "not copied") for f in made
    )
    assert manifest.database == ("db.sqlite3" if connection.vendor == "sqlite" else "pg_dump")


def test_a_manifest_name_cannot_leave_the_backup(tmp_path):
    with pytest.raises(ValueError, match="leaves the backup"):
        safe_path(tmp_path, "../../etc/passwd")


@pytest.mark.django_db(transaction=True)
def test_on_postgresql_the_bytes_come_back_into_an_empty_store(alice, make_file, tmp_path, settings):
    """PostgreSQL: pg_restore brings the database back; restore brings the bytes."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite's restore brings the database back too (above)")
    made = [make_file(alice, name=f"{n}.bin", data=os.urandom(700 + n)) for n in range(3)]
    call_command("backup", str(tmp_path / "backup"), "--files")
    settings.MEDIA_ROOT = tmp_path / "new-store"
    call_command("restore", str(tmp_path / "backup"))
    for stored in made:
        assert sha256(tmp_path / "new-store" / stored.content.name) == stored.sha256
    with pytest.raises(CommandError, match="the file store already holds"):
        call_command("restore", str(tmp_path / "backup"))
