"""SQLite's event-driven pick-up and its off-path WAL checkpoints, for real:
a bound UNIX socket, commits from other connections, a real WAL file."""

import os
import queue
import socket
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from expiry.checkpoint import WalCheckpointer
from expiry.notify import wakeup_socket_path
from expiry.store import ShareStore
from expiry.watchers import UP, WATCHED_INTERVAL, DatagramWatcher, watcher_for
from sharing.models import Share
from sharing.signals import shares_expired
from tests.helpers import create_share, in_other_connection, wait_until

pytestmark = [
    pytest.mark.skipif("connection.vendor != 'sqlite'", reason="SQLite's own wake-up path"),
    pytest.mark.django_db(transaction=True),
]


def has_bound(watcher: DatagramWatcher) -> bool:
    """Wait until the listener reports its socket bound (UP, first in its queue)."""
    return wait_until(lambda: watcher.queue.queue and watcher.queue.queue[0] == UP, 5)


def test_sqlite_daemons_get_the_datagram_watcher():
    watcher = watcher_for()
    assert isinstance(watcher, DatagramWatcher)
    assert watcher.path == f"{connection.settings_dict['NAME']}.wakeup"


def test_a_share_committed_elsewhere_arrives_as_a_notice(shared_file):
    watcher = watcher_for()
    wake = threading.Event()
    watcher.start(wake)
    try:
        assert has_bound(watcher)
        watcher.take_notices()
        assert watcher.listening
        wake.clear()

        share = in_other_connection(lambda: create_share(shared_file, 30))
        assert wake.wait(5)
        # The write may wake it first (expiry/wal_watch.py), then its notice.
        notices = []
        assert wait_until(lambda: notices.extend(watcher.take_notices()) or notices, 5)
        # Polling slows down while listening: to a look once in a while
        # when writes are watched (expiry/wal_watch.py), else every safety interval.
        slowest = WATCHED_INTERVAL if watcher.writes.watching else watcher.safety_interval
        assert watcher.pickup_interval(0.05) == slowest
    finally:
        watcher.stop()
    assert notices == [(share.pk, share.expires_at.timestamp())]


def test_the_watcher_polls_until_it_listens_and_cleans_up_its_socket(shared_file):
    watcher = watcher_for()
    assert watcher.pickup_interval(0.05) == 0.05  # not started: poll as before
    assert watcher.changed()  # data_version: the first look counts
    assert not watcher.changed()
    in_other_connection(lambda: create_share(shared_file, 30))
    assert watcher.changed()

    watcher.start(threading.Event())
    assert has_bound(watcher)
    path = wakeup_socket_path()
    watcher.stop()
    assert not os.path.exists(path)


def test_a_stale_socket_file_from_a_killed_daemon_does_not_stop_the_next(shared_file):
    path = wakeup_socket_path()
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    stale.bind(path)
    stale.close()  # the file stays, as after SIGKILL

    watcher = DatagramWatcher()
    watcher.start(threading.Event())
    try:
        assert has_bound(watcher)
    finally:
        watcher.stop()


def test_the_daemon_connection_leaves_checkpoints_to_the_checkpointer(shared_file):
    share = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1))
    assert ShareStore().expire([share.pk], time.time() + 2 * 3600) == [share.pk]
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_autocheckpoint")
        assert cursor.fetchone()[0] == 0


def test_the_daemon_connection_keeps_its_temporary_tables_in_memory(shared_file):
    # The expiry UPDATE's RETURNING goes through a temporary table: in a
    # file, every batch would open and unlink one in /var/tmp.
    # Expired as of an hour past its deadline: no sleep, no race with a busy machine.
    share = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1))
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA temp_store = DEFAULT")
    assert ShareStore().expire([share.pk], time.time() + 2 * 3600) == [share.pk]
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA temp_store")
        assert cursor.fetchone()[0] == 2  # MEMORY


def test_the_checkpointer_runs_after_expiries_and_rests_when_idle(shared_file):
    checkpointer = WalCheckpointer(connection.settings_dict["NAME"], busy_interval=0.05, idle_interval=60)
    checkpointer.start()
    try:
        time.sleep(0.3)
        assert checkpointer.checkpoints == 0  # nothing written: no wake-up, no checkpoint
        shares_expired.send(sender=ShareStore, share_ids=[1], ended_at=timezone.now())
        assert wait_until(lambda: checkpointer.checkpoints == 1, 5)
    finally:
        checkpointer.stop()
        checkpointer.join(5)
    assert not checkpointer.is_alive()


def test_notices_queue_is_drained_on_stop():
    watcher = DatagramWatcher(path=None)
    watcher.queue.put((1, 2.0))
    watcher.stop()
    with pytest.raises(queue.Empty):
        watcher.queue.get_nowait()
