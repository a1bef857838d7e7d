"""The `microcloud` command (client/, installed by requirements-dev.txt)
against gunicorn: every subcommand's --help, put and get round trips, a put
and a get each killed and resumed, and refusals as one line and exit 1."""

import hashlib
import json
import subprocess
import time
import zipfile
from pathlib import Path

import pytest

from sharing.models import Share
from tests.cli.commands import COMMAND, SUBCOMMANDS, microcloud, pause, random_file, sha256, start_microcloud
from tests.helpers import wait_until
from uploads.models import Upload

pytestmark = pytest.mark.django_db(transaction=True)


def test_every_subcommand_has_help():
    top = subprocess.run([COMMAND, "--help"], capture_output=True, text=True, check=True)
    for name in SUBCOMMANDS:
        assert name in top.stdout
        sub = subprocess.run([COMMAND, name, "--help"], capture_output=True, text=True, check=True)
        assert sub.stdout.startswith(f"usage: microcloud {name}"), sub.stdout
        assert "MICROCLOUD_URL" in sub.stdout


def test_put_prints_the_link_last_and_get_writes_the_same_bytes(env, tmp_path):
    report = tmp_path / "report.txt"
    report.write_text("Quarterly numbers: up.\n")
    done = microcloud(env, "put", str(report), "--expires", "2h", "--limit", "3", "--message", "For you")
    link = done.stdout.strip().splitlines()[-1]
    share = Share.objects.get(token=link.rsplit("/", 1)[-1])
    assert (share.max_downloads, share.message) == (3, "For you")
    assert 7100 < (share.expires_at - share.created_at).total_seconds() <= 7200

    out = tmp_path / "out"
    out.mkdir()
    got = microcloud(env, "get", link, "-d", str(out))
    assert got.stdout.strip() == str(out / "report.txt")
    assert (out / "report.txt").read_text() == "Quarterly numbers: up.\n"
    assert sorted(p.name for p in out.iterdir()) == ["report.txt"]  # no partial file left

    # The same name again is refused rather than overwritten.
    again = microcloud(env, "get", link, "-d", str(out), check=False)
    assert again.returncode == 1
    assert "already exists" in again.stderr

    listed = microcloud(env, "ls").stdout
    assert link in listed
    assert "report.txt" in listed
    assert "1/3" in listed


def test_several_files_share_one_link_and_get_saves_their_zip(env, tmp_path):
    first, second = tmp_path / "a.txt", tmp_path / "b.bin"
    first.write_text("alpha\n")
    random_file(second, 3 * 1024 * 1024 + 7)
    link = microcloud(env, "put", str(first), str(second)).stdout.strip().splitlines()[-1]
    path = Path(microcloud(env, "get", link, "-d", str(tmp_path)).stdout.strip())
    with zipfile.ZipFile(path) as archive:
        assert archive.read("a.txt") == b"alpha\n"
        assert hashlib.sha256(archive.read("b.bin")).hexdigest() == sha256(second)


def test_unshare_and_extend_by_link_or_id(env, tmp_path):
    note = tmp_path / "note.txt"
    note.write_text("hello\n")
    link = microcloud(env, "put", str(note), "--expires", "60").stdout.strip().splitlines()[-1]
    share = Share.objects.get(token=link.rsplit("/", 1)[-1])
    microcloud(env, "extend", link, "--expires", "1d")
    share.refresh_from_db()
    assert (share.expires_at - share.created_at).total_seconds() > 86000
    microcloud(env, "unshare", str(share.pk))
    share.refresh_from_db()
    assert share.ended_at is not None
    assert share.end_reason == "unshared"
    refused = microcloud(env, "get", link, "-d", str(tmp_path), check=False)
    assert (refused.returncode, refused.stderr) == (1, "microcloud: This link has been unshared.\n")


def test_errors_are_one_line_and_exit_1(env, tmp_path, alice, settings):
    note = tmp_path / "note.txt"
    note.write_text("hello\n")
    cases = [
        (("put", str(tmp_path / "missing.txt")), "no such file"),
        (("put", str(note), "--expires", "soon"), "--expires 'soon'"),
        (("put", str(note), "--expires", "99999999"), "maximum lifetime"),
        (("get", f"{env['MICROCLOUD_URL']}/s/nosuchlink", "-d", str(tmp_path)), "No such link."),
        (("extend", "999999", "--expires", "60"), "No Share matches"),
    ]
    for args, said in cases:
        done = microcloud(env, *args, check=False)
        assert done.returncode == 1, (args, done.stdout)
        assert done.stderr.count("\n") == 1, done.stderr
        assert done.stderr.startswith("microcloud: "), done.stderr
        assert said in done.stderr, (args, done.stderr)

    # A quota too small: refused at the tus creation, nothing stored.
    alice.storage.quota_bytes = 3
    alice.storage.save()
    done = microcloud(env, "put", str(note), check=False)
    assert done.returncode == 1
    assert "Not enough storage" in done.stderr, done.stderr

    not_a_link = microcloud(env, "get", "x", check=False)
    assert not_a_link.returncode == 1
    assert not_a_link.stderr.startswith("microcloud: not an http(s) URL")

    no_token = microcloud({**env, "MICROCLOUD_TOKEN": "wrong"}, "ls", check=False)
    assert no_token.returncode == 1
    assert "Invalid token" in no_token.stderr, no_token.stderr


def test_an_expired_link_is_refused(env, tmp_path):
    note = tmp_path / "note.txt"
    note.write_text("hello\n")
    link = microcloud(env, "put", str(note), "--expires", "1").stdout.strip().splitlines()[-1]
    share = Share.objects.get(token=link.rsplit("/", 1)[-1])
    assert wait_until(lambda: time.time() > share.expires_at.timestamp(), timeout=5)
    done = microcloud(env, "get", link, "-d", str(tmp_path), check=False)
    assert (done.returncode, done.stderr) == (1, "microcloud: This link has expired.\n")


def test_login_keeps_the_token_readable_by_its_owner_only(env, server, alice, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]
    alice.set_password("alice-password-1")
    alice.save()
    bare = {name: value for name, value in env.items() if name not in ("MICROCLOUD_URL", "MICROCLOUD_TOKEN")}
    done = microcloud(
        {**bare, "MICROCLOUD_PASSWORD": "alice-password-1"}, "login", "--url", server, "--username", "alice"
    )
    saved = Path(bare["XDG_CONFIG_HOME"]) / "microcloud" / "config.json"
    assert str(saved) in done.stdout
    assert saved.stat().st_mode & 0o777 == 0o600
    assert saved.parent.stat().st_mode & 0o777 == 0o700
    assert json.loads(saved.read_text())["url"] == server
    assert microcloud(bare, "ls").returncode == 0  # the saved token works

    wrong = microcloud(
        {**bare, "MICROCLOUD_PASSWORD": "nope"}, "login", "--url", server, "--username", "alice", check=False
    )
    assert wrong.returncode == 1
    assert "Unable to log in" in wrong.stderr


def test_a_killed_put_resumes_where_the_server_stopped(env, tmp_path):
    big = random_file(tmp_path / "big.bin", 96 * 1024 * 1024)
    running = start_microcloud(env, "put", "-q", str(big))
    state = Path(env["XDG_STATE_HOME"]) / "microcloud" / "uploads.json"

    def some_sent():
        upload = Upload.objects.first()
        return upload is not None and upload.offset >= 8 * 1024 * 1024

    try:
        assert wait_until(some_sent, timeout=120)
    finally:
        running.kill()
        running.wait()
    upload = Upload.objects.get()
    sent_before = upload.offset
    assert 0 < sent_before < big.stat().st_size
    assert json.loads(state.read_text())  # the unfinished upload is remembered

    done = microcloud(env, "put", "-q", str(big))
    link = done.stdout.strip().splitlines()[-1]
    assert Upload.objects.count() == 1  # the same upload, resumed, not a second one
    share = Share.objects.get(token=link.rsplit("/", 1)[-1])
    assert [stored.sha256 for stored in share.files] == [sha256(big)]
    assert json.loads(state.read_text()) == {}


def test_a_killed_get_resumes_and_a_one_download_link_counts_one(env, tmp_path):
    big = random_file(tmp_path / "big.bin", 256 * 1024 * 1024)
    link = microcloud(env, "put", "-q", str(big), "--limit", "1").stdout.strip().splitlines()[-1]
    out = tmp_path / "out"
    out.mkdir()
    running = start_microcloud(env, "get", "-q", link, "-d", str(out))

    def partial_bytes():
        parts = list(out.glob(".microcloud-*.part"))
        return parts[0].stat().st_size if parts else 0

    try:
        assert wait_until(lambda: partial_bytes() > 0, timeout=60)
        pause(running)  # it stops reading; the server's send waits
        cut = partial_bytes()
    finally:
        running.kill()
        running.wait()
    assert 0 < cut < big.stat().st_size

    done = microcloud(env, "get", "-q", link, "-d", str(out))
    assert done.stdout.strip() == str(out / "big.bin")
    assert sha256(out / "big.bin") == sha256(big)
    share = Share.objects.get(token=link.rsplit("/", 1)[-1])
    assert share.download_count == 1  # the resume is the same download
