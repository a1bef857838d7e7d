"""The daemon asks for SQLite's write lock every 0.2 ms (sqlite_writers.poll)
instead of sleeping in the busy handler's growing back-off."""

import sqlite3

import pytest

from sqlite_writers.poll import POLL, begin_immediate


@pytest.fixture
def database(tmp_path):
    path = tmp_path / "db.sqlite3"
    setup = sqlite3.connect(path, isolation_level=None)
    setup.execute("PRAGMA journal_mode=WAL")
    setup.execute("CREATE TABLE t (x)")
    setup.close()
    return path


def connect(path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None, timeout=20)


def test_it_polls_while_another_writer_holds_the_lock_then_gets_in(database):
    holder, daemon = connect(database), connect(database)
    holder.execute("BEGIN IMMEDIATE")
    slept = []

    def sleep(seconds):
        slept.append(seconds)
        if len(slept) == 3:
            holder.execute("COMMIT")  # the holder commits while the daemon waits

    begin_immediate(daemon, 20.0, sleep=sleep)
    assert slept == [POLL] * 3  # asked again every POLL, not after the busy handler's sleeps
    daemon.execute("INSERT INTO t VALUES (1)")
    daemon.execute("COMMIT")
    assert daemon.execute("PRAGMA busy_timeout").fetchone() == (20000,)


def test_it_gives_up_after_the_timeout_and_keeps_the_busy_timeout(database):
    holder, daemon = connect(database), connect(database)
    holder.execute("BEGIN IMMEDIATE")
    now = [0.0]

    def sleep(seconds):
        now[0] += seconds

    with pytest.raises(sqlite3.OperationalError, match="locked"):
        begin_immediate(daemon, 0.01, clock=lambda: now[0], sleep=sleep)
    assert now[0] == pytest.approx(0.01, abs=POLL)
    assert daemon.execute("PRAGMA busy_timeout").fetchone() == (10,)
    assert not daemon.in_transaction


def test_other_errors_are_not_retried(database):
    daemon = connect(database)
    daemon.execute("BEGIN")
    with pytest.raises(sqlite3.OperationalError, match="within a transaction"):
        begin_immediate(daemon, 20.0, sleep=lambda s: pytest.fail("retried"))
