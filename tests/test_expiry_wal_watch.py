"""expiry/wal_watch.py: the SQLite daemon looks for notice-less writes when
the database was written (inotify), at most once a pause, instead of every
2 s. Real files in a real folder, a real inotify descriptor, a real thread.
The daemon with it: tests/test_idle_wakeups.py."""

import threading
import time

import pytest

from expiry import watchers
from expiry.wal_watch import WalWatch
from tests.helpers import wait_until


class Calls:
    def __init__(self):
        self.times: list[float] = []
        self.event = threading.Event()

    def __call__(self):
        self.times.append(time.monotonic())
        self.event.set()


@pytest.fixture
def watch(tmp_path):
    started = []

    def start(pause: float = 0.5, folder=None) -> tuple[WalWatch, Calls]:
        calls = Calls()
        thread = WalWatch((folder or tmp_path) / "db.sqlite3", calls, pause=pause)
        thread.start()
        started.append(thread)
        return thread, calls

    yield start
    for thread in started:
        thread.stop()
        thread.join(5)
        assert not thread.is_alive()


def append(path, data: bytes = b"x") -> None:
    with open(path, "ab") as file:
        file.write(data)


def test_a_write_to_the_wal_calls_at_once(watch, tmp_path):
    thread, calls = watch()
    assert wait_until(lambda: thread.watching, 5)
    written_at = time.monotonic()
    append(tmp_path / "db.sqlite3-wal")
    assert calls.event.wait(5)
    assert calls.times[0] - written_at < 0.25
    assert len(calls.times) == 1


@pytest.mark.parametrize("name", ["db.sqlite3", "db.sqlite3-wal", "db.sqlite3-journal"])
def test_writes_to_each_of_the_databases_files_count(watch, tmp_path, name):
    thread, calls = watch()
    assert wait_until(lambda: thread.watching, 5)
    append(tmp_path / name)
    assert calls.event.wait(5)


def test_writes_to_other_files_in_the_folder_do_not(watch, tmp_path):
    thread, calls = watch()
    assert wait_until(lambda: thread.watching, 5)
    for name in ("ratelimit.sqlite3-wal", "db.sqlite3-shm", "db.sqlite3.wakeup", "other.sqlite3"):
        append(tmp_path / name)
    assert not calls.event.wait(0.5)


def test_a_stream_of_writes_calls_once_a_pause_and_no_more(watch, tmp_path):
    """So a busy database costs at most the clock's looks, and a write is
    never left unlooked-at longer than one pause."""
    pause = 0.4
    thread, calls = watch(pause=pause)
    assert wait_until(lambda: thread.watching, 5)
    started = time.monotonic()
    while time.monotonic() - started < 2.0:
        append(tmp_path / "db.sqlite3-wal")
        time.sleep(0.01)
    last_write = time.monotonic()
    time.sleep(2 * pause + 0.1)  # the rest after the last call, and a look if due
    gaps = [later - earlier for earlier, later in zip(calls.times, calls.times[1:], strict=False)]
    assert len(calls.times) <= 2.0 / pause + 2
    assert min(gaps) >= pause * 0.9
    assert calls.times[-1] >= last_write - pause * 0.1  # the last writes were looked at too
    assert max(gaps) < pause * 2.5


def test_a_folder_it_cannot_watch_leaves_the_daemon_on_its_clock(watch, tmp_path):
    thread, calls = watch(folder=tmp_path / "missing")
    thread.join(5)
    assert not thread.watching
    assert calls.times == []  # it never watched: nothing to hand back
    watcher = watchers.DatagramWatcher(path=str(tmp_path / "db.wakeup"))
    watcher.writes, watcher.listening = thread, True
    assert watcher.pickup_interval(0.05) == watchers.SAFETY_INTERVAL


def test_the_daemon_looks_rarely_only_while_writes_are_watched(watch, tmp_path):
    thread, _ = watch()
    assert wait_until(lambda: thread.watching, 5)
    watcher = watchers.DatagramWatcher(path=str(tmp_path / "db.wakeup"))
    watcher.writes = thread
    assert watcher.pickup_interval(0.05) == 0.05  # not listening yet: polling
    watcher.listening = True
    assert watcher.pickup_interval(0.05) == watchers.WATCHED_INTERVAL
    thread.stop()
    thread.join(5)
    assert watcher.pickup_interval(0.05) == watchers.SAFETY_INTERVAL
