"""SQLite writers queue on a flock() beside the database (sqlite_writers.queue).

A writer waiting in the queue shows in /proc/locks as a blocked flock on the
queue file's inode: the tests hold the queue, start a writer, see it wait
there (not in SQLite's busy handler), then let it go.
"""

import fcntl
import os
import stat
import threading
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction

from ratelimit.counters import SqliteCounters
from sqlite_writers.queue import WriterQueue, queue_for
from tests.helpers import wait_until

sqlite_only = pytest.mark.skipif(connection.vendor != "sqlite", reason="the queue is SQLite's")


def waiting_on(path: Path) -> int:
    """How many flock() waiters /proc/locks shows on `path`'s inode."""
    inode = os.stat(path).st_ino
    lines = Path("/proc/locks").read_text().splitlines()
    return sum(1 for line in lines if "->" in line and line.split()[-3].endswith(f":{inode}"))


def free(path: Path) -> bool:
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def test_one_writer_at_a_time_and_the_file_is_private(tmp_path):
    first, second = WriterQueue(tmp_path / "db.sqlite3"), WriterQueue(tmp_path / "db.sqlite3")
    first.join()
    assert stat.S_IMODE(first.path.stat().st_mode) == 0o600
    assert not free(first.path)
    got_in = threading.Event()
    waiter = threading.Thread(target=lambda: (second.join(), got_in.set()))
    waiter.start()
    assert wait_until(lambda: waiting_on(first.path) == 1, timeout=10)
    assert not got_in.is_set()
    first.leave()
    waiter.join(10)
    assert got_in.is_set()
    second.leave()
    assert free(first.path)


def test_in_memory_databases_have_no_queue():
    assert queue_for(":memory:") is None
    assert queue_for("file:memorydb_default?mode=memory&cache=shared") is None
    assert queue_for("/var/db.sqlite3").path == Path("/var/db.sqlite3.writers")


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_a_transaction_holds_its_place_until_it_commits_or_rolls_back():
    path = Path(f"{connection.settings_dict['NAME']}.writers")
    with transaction.atomic():
        get_user_model().objects.create(username="committed")
        assert not free(path)
    assert free(path)
    held_inside = []

    def rolled_back():
        with transaction.atomic():
            get_user_model().objects.create(username="rolled-back")
            held_inside.append(not free(path))
            raise RuntimeError("roll back")

    with pytest.raises(RuntimeError, match="roll back"):
        rolled_back()
    assert held_inside == [True]
    assert free(path)
    assert not get_user_model().objects.filter(username="rolled-back").exists()


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_a_writer_waits_in_the_queue_not_in_sqlites_busy_handler():
    path = Path(f"{connection.settings_dict['NAME']}.writers")
    holder = WriterQueue(connection.settings_dict["NAME"])
    holder.join()
    done = threading.Event()

    def write():
        try:
            with transaction.atomic():
                get_user_model().objects.create(username="queued")
            done.set()
        finally:
            connection.close()

    writer = threading.Thread(target=write)
    writer.start()
    try:
        assert wait_until(lambda: waiting_on(path) == 1, timeout=10)
        assert not done.is_set()
    finally:
        holder.leave()
        writer.join(30)
    assert done.is_set()
    assert get_user_model().objects.filter(username="queued").exists()


def test_rate_counters_queue_their_writes(tmp_path):
    counters = SqliteCounters(tmp_path / "ratelimit.sqlite3")
    assert counters.incr("k", 60) == 1  # creates the file and the queue
    holder = WriterQueue(tmp_path / "ratelimit.sqlite3")
    holder.join()
    results = []
    counter = threading.Thread(target=lambda: results.append(counters.incr("k", 60)))
    counter.start()
    try:
        assert wait_until(lambda: waiting_on(holder.path) == 1, timeout=10)
        assert results == []
    finally:
        holder.leave()
        counter.join(10)
    assert results == [2]
