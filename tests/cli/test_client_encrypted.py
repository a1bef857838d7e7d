"""`microcloud put --encrypt` and `get` of its #secret link against gunicorn:
the files come back byte-identical, the server stores and logs nothing it
could read them by, an altered byte is refused, a cut download resumes
without fetching again what it has, and a one-download link counts one."""

import io
import re
import subprocess
import time
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from microcloud_cli import ece

from sharing.models import Share, StoredFile
from tests.cli.commands import microcloud, pause, random_file, sha256, start_microcloud
from tests.helpers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

NAME = "board-minutes-confidential.txt"


def put_encrypted(env, *paths, options=()):
    done = microcloud(env, "put", "-q", "--encrypt", *options, *map(str, paths))
    link = done.stdout.strip().splitlines()[-1]
    base, secret = link.split("#")
    return link, base, secret, Share.objects.get(token=base.rsplit("/", 1)[-1])


def stored_bytes(share: Share) -> list[bytes]:
    return [Path(stored.content.path).read_bytes() for stored in share.files]


def holds_a_run_of(data: bytes, stored: bytes, run: int = 64) -> bool:
    """Whether `stored` holds any `run` bytes of `data` in a row: every such
    run holds a whole aligned block of run / 2 bytes, so looking for those is
    enough."""
    half = run // 2
    blocks = {data[i : i + half] for i in range(0, len(data) - half + 1, half)}
    return any(stored[i : i + half] in blocks for i in range(len(stored) - half + 1))


def assert_the_database_never_holds(*texts: str) -> None:
    """No row of any table holds any of `texts`; on SQLite, no byte of the
    database's files either (freed pages and the write-ahead log included)."""
    rows = io.StringIO()
    call_command("dumpdata", stdout=rows)
    for text in texts:
        assert text not in rows.getvalue(), text
    if connection.vendor == "sqlite":
        database = Path(connection.settings_dict["NAME"])
        for path in [database, *database.parent.glob(database.name + "-wal")]:
            # Read by another process: closing a descriptor of the database
            # in this one would drop the SQLite locks its connections hold.
            for text in texts:
                found = subprocess.run(["grep", "-cF", text, str(path)], capture_output=True, text=True)
                assert found.stdout.strip() == "0", (path, text)


def test_two_files_round_trip_and_the_server_holds_no_plaintext_name_or_secret(env, tmp_path, settings):
    first = tmp_path / NAME
    first.write_bytes(b"The minutes of the board, item 1: " + b"confidential. " * 20000)
    second = random_file(tmp_path / "scan-0001.bin", 3 * 1024 * 1024 + 11)
    link, _, secret, share = put_encrypted(env, first, second, options=("--message", "Read before Monday"))

    assert sorted(stored.name for stored in StoredFile.objects.all()) == ["encrypted-1", "encrypted-2"]
    assert share.message == ""
    for plain, stored in zip((first, second), stored_bytes(share), strict=True):
        assert len(stored) == ece.encrypted_size(plain.stat().st_size)
        assert not holds_a_run_of(plain.read_bytes(), stored)
    assert_the_database_never_holds(NAME, "Read before Monday")
    log = (tmp_path / "web.log").read_text()

    out = tmp_path / "out"
    out.mkdir()
    done = microcloud(env, "get", "-q", link, "-d", str(out))
    assert done.stdout.split() == [str(out / NAME), str(out / "scan-0001.bin")]
    assert sha256(out / NAME) == sha256(first)
    assert sha256(out / "scan-0001.bin") == sha256(second)
    assert sorted(p.name for p in out.iterdir()) == [NAME, "scan-0001.bin"]
    log = (tmp_path / "web.log").read_text()
    assert secret not in log
    assert "/sealed" in log  # the log is the one the requests went to

    # Without its secret, or with another one, nothing opens.
    wrong = microcloud(env, "get", link[:-4] + "AAAA", "-d", str(out), check=False)
    assert wrong.returncode == 1
    assert wrong.stderr == "microcloud: the link's #secret does not open it: check that the whole link was copied\n"


def test_an_altered_byte_on_disk_fails_the_download_and_keeps_nothing(env, tmp_path):
    plain = random_file(tmp_path / "report.pdf", 300_000)
    link, _, _, share = put_encrypted(env, plain)
    path = Path(share.files[0].content.path)
    body = bytearray(path.read_bytes())
    body[ece.record_offset(2) + 10] ^= 0x40
    path.write_bytes(body)
    out = tmp_path / "out"
    out.mkdir()
    done = microcloud(env, "get", "-q", link, "-d", str(out), check=False)
    assert done.returncode == 1
    assert done.stderr == (
        "microcloud: report.pdf: record 2 does not decrypt: the wrong key, or altered bytes; nothing was kept\n"
    )
    assert list(out.iterdir()) == []


def test_an_expired_encrypted_link_is_refused(env, tmp_path):
    plain = tmp_path / "note.txt"
    plain.write_text("hello\n")
    link, _, _, share = put_encrypted(env, plain, options=("--expires", "1"))
    assert wait_until(lambda: time.time() > share.expires_at.timestamp(), timeout=5)
    done = microcloud(env, "get", link, "-d", str(tmp_path), check=False)
    assert (done.returncode, done.stderr) == (1, "microcloud: This link has expired.\n")


def test_a_cut_download_resumes_from_its_records_and_a_one_download_link_counts_one(env, tmp_path):
    plain = random_file(tmp_path / "big.iso", 200 * 1024 * 1024)
    link, _, _, share = put_encrypted(env, plain, options=("--limit", "1"))
    size = share.size
    out = tmp_path / "out"
    out.mkdir()
    running = start_microcloud(env, "get", "-q", link, "-d", str(out))

    def decrypted():
        parts = list(out.glob(".microcloud-*.plain.part"))
        return parts[0].stat().st_size if parts else 0

    try:
        assert wait_until(lambda: decrypted() > 0, timeout=60)
        pause(running)
        kept = decrypted()
    finally:
        running.kill()
        running.wait()
    assert 0 < kept < plain.stat().st_size
    records_kept = kept // ece.plaintext_per_record()

    done = microcloud(env, "get", "-q", link, "-d", str(out))
    assert done.stdout.strip() == str(out / "big.iso")
    assert sha256(out / "big.iso") == sha256(plain)
    share.refresh_from_db()
    assert share.download_count == 1
    # The resume asked for the records it lacked, from the first one it had not kept whole.
    resumed = [int(n) for n in re.findall(r'"GET /s/\S+ HTTP/1.1" 206 (\d+)', (tmp_path / "web.log").read_text())]
    assert resumed == [size - ece.record_offset(records_kept)]


def test_a_get_cut_after_its_first_file_resumes_the_second_and_keeps_the_first(env, tmp_path):
    small = random_file(tmp_path / "notes.txt", 300 * 1024)
    big = random_file(tmp_path / "big.iso", 120 * 1024 * 1024)
    link, *_ = put_encrypted(env, small, big)
    out = tmp_path / "out"
    out.mkdir()
    running = start_microcloud(env, "get", "-q", link, "-d", str(out))

    def second_begun():
        parts = list(out.glob(".microcloud-*.plain.part"))
        return (out / "notes.txt").exists() and bool(parts) and parts[0].stat().st_size > 0

    try:
        assert wait_until(second_begun, timeout=60)
        pause(running)
    finally:
        running.kill()
        running.wait()
    assert not (out / "big.iso").exists()

    done = microcloud(env, "get", "-q", link, "-d", str(out))
    assert done.stdout.split() == [str(out / "notes.txt"), str(out / "big.iso")]
    assert sha256(out / "notes.txt") == sha256(small)
    assert sha256(out / "big.iso") == sha256(big)
    assert not list(out.glob(".microcloud-*"))
    # The second run asked only for the rest of the second file.
    log = (tmp_path / "web.log").read_text()
    assert len(re.findall(r'"GET /s/\S+/files/1 HTTP/1.1" 200', log)) == 1
    assert len(re.findall(r'"GET /s/\S+/files/2 HTTP/1.1" 206', log)) == 1
