"""The idle paths that block instead of polling: the webhook thread poked by
the daemon and by this process's own writes, the wake-up socket's listener
with no receive timeout, and gunicorn's master and workers asleep while they
hold nothing (microcloud.gunicorn_conf). Nothing here times a sleep: waits
are bounded joins or Events, and the clocks are injected."""

import queue
import threading
import time
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.db import connection, transaction
from django.utils import timezone

from expiry import watchers
from expiry.service import build_service
from microcloud import gunicorn_conf
from sharing.models import Share
from sharing.signals import share_events_saved, shares_expired
from tests.helpers import wait_until
from webhooks import worker as webhook_worker
from webhooks.worker import POKE_MIN_GAP, WebhookThread


class IdleWorker:
    """A DeliveryWorker stand-in: nothing pending, nothing new."""

    using = "default"

    def __init__(self):
        self.idle_mark = ("conn", 1)
        self.looked = threading.Event()

    def nothing_new(self):
        self.looked.set()
        return True


# --- the webhook thread ----------------------------------------------------------


def test_with_nothing_pending_and_a_poker_the_thread_sleeps_its_idle_wait():
    thread = WebhookThread(IdleWorker(), poll_interval=1.0, concurrency=1)
    assert thread.idle_pause() == 1.0  # nobody promised to poke it
    thread.idle_wait = 60.0
    assert thread.idle_pause() == 60.0
    thread.worker.idle_mark = None  # something pending: it may fall due by the clock
    assert thread.idle_pause() == 1.0


def test_a_poke_ends_the_pause_and_is_cleared_for_the_next_one():
    thread = WebhookThread(IdleWorker(), poll_interval=1.0, concurrency=1)
    thread.last_look = 0.0
    thread.poke()
    thread.pause(3600, clock=lambda: 100.0)  # returns at once: poked, and the gap long past
    assert not thread.wake.is_set()


def test_pokes_within_the_gap_wait_for_its_end(monkeypatch):
    thread = WebhookThread(IdleWorker(), poll_interval=1.0, concurrency=1)
    waited = []
    monkeypatch.setattr(thread.stop_requested, "wait", lambda seconds: waited.append(seconds))
    thread.last_look = 10.0
    thread.poke()
    thread.pause(3600, clock=lambda: 10.0 + POKE_MIN_GAP / 4)
    assert waited == [pytest.approx(POKE_MIN_GAP * 3 / 4)]


def test_a_running_thread_looks_again_when_poked():
    worker = IdleWorker()
    thread = WebhookThread(worker, poll_interval=3600, concurrency=1)
    thread.idle_wait = 3600
    thread.start()
    try:
        assert worker.looked.wait(10)
        worker.looked.clear()
        thread.poke()
        assert worker.looked.wait(10)
    finally:
        thread.stop()
        thread.join(10)
    assert not thread.is_alive()


def test_expiries_poke_and_events_poke_once_committed(db, django_capture_on_commit_callbacks):
    thread = WebhookThread(IdleWorker(), poll_interval=1.0, concurrency=1)
    thread.connect_pokes()
    try:
        shares_expired.send(sender=None, share_ids=[1], ended_at=None, using="default")
        assert thread.wake.is_set()
        thread.wake.clear()
        with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
            share_events_saved.send(sender=None, events=[], using="default")
            assert not thread.wake.is_set()  # not before the commit
        assert thread.wake.is_set()
    finally:
        thread.disconnect_pokes()
    thread.wake.clear()
    shares_expired.send(sender=None, share_ids=[1], ended_at=None, using="default")
    assert not thread.wake.is_set()


def test_the_service_wires_the_pokes_on_sqlite(db, settings):
    service = build_service(lease="on", reminders=False)
    thread, watcher = service.webhooks, service.scheduler.watcher
    if not watcher.sees_other_writers:
        pytest.skip("the database's watcher does not see other writers' commits (SQLite only)")
    assert thread.idle_wait == settings.WEBHOOK_IDLE_WAIT
    assert service.daemon.on_standby == thread.poke
    housekeeper = service.housekeeper
    assert housekeeper.sweeps_after_writes
    housekeeper.swept_clean = True
    watcher.on_change()  # another process committed
    assert thread.wake.is_set()  # the webhook thread looks for new deliveries
    assert not housekeeper.swept_clean  # and the housekeeper sweeps again


# --- the daemon's watchers -------------------------------------------------------


class FakeVersions:
    def __init__(self, answers):
        self.answers = list(answers)

    def changed(self):
        return self.answers.pop(0)


def test_the_datagram_watcher_pokes_only_when_another_writer_committed():
    watcher = watchers.DatagramWatcher(path="/nonexistent/none.wakeup")
    watcher.versions = FakeVersions([False, True])
    pokes = []
    watcher.on_change = lambda: pokes.append(1)
    assert watcher.changed() is False
    assert pokes == []
    assert watcher.changed() is True
    assert pokes == [1]


def test_notices_poke_too():
    watcher = watchers.NotifyWatcher(safety_interval=2.0, conninfo="")
    pokes = []
    watcher.on_change = lambda: pokes.append(1)
    assert watcher.take_notices() == []
    assert pokes == []
    watcher.queue.put((7, 1.5))
    assert watcher.take_notices() == [(7, 1.5)]
    assert pokes == [1]


def test_the_listener_needs_no_receive_timeout_to_stop(tmp_path):
    wake = threading.Event()
    listener = watchers.DatagramListener(str(tmp_path / "db.wakeup"), queue.Queue(), wake)
    listener.start()
    assert wake.wait(10)  # bound and listening (UP)
    assert listener.sock.gettimeout() is None
    listener.stop()
    listener.join(10)
    assert not listener.is_alive()


def test_the_listener_stops_even_when_its_wake_up_datagram_is_lost(tmp_path, monkeypatch):
    wake = threading.Event()
    listener = watchers.DatagramListener(str(tmp_path / "db.wakeup"), queue.Queue(), wake)
    listener.start()
    assert wake.wait(10)
    monkeypatch.setattr(watchers, "send_datagram", lambda path, payload: False)
    listener.stop()
    listener.join(10)
    assert not listener.is_alive()


# --- gunicorn (microcloud.gunicorn_conf) -------------------------------------------


def test_idle_wait_is_a_quarter_of_the_worker_timeout_within_bounds():
    assert gunicorn_conf.idle_wait(120) == 30.0
    assert gunicorn_conf.idle_wait(20) == 5.0
    assert gunicorn_conf.idle_wait(2) == 1.0
    assert gunicorn_conf.idle_wait(0) == gunicorn_conf.IDLE_WAIT_MAX


def _quiet_worker(monkeypatch, **state):
    waits = []
    monkeypatch.setattr(
        gunicorn_conf.ThreadWorker, "wait_for_and_dispatch_events", lambda self, timeout: waits.append(timeout)
    )
    worker = object.__new__(gunicorn_conf.ThreadWorker)
    worker.alive, worker.cfg = True, SimpleNamespace(timeout=120)
    worker.keepalived_conns, worker.pending_conns = [], []
    vars(worker).update(state)
    monkeypatch.setattr(gunicorn_conf, "PR_SET_PDEATHSIG", -1)  # not for the test process: prctl refuses -1
    gunicorn_conf.post_fork(None, worker)
    return worker, waits


def test_a_worker_holding_no_connection_sleeps_until_its_heartbeat(monkeypatch):
    worker, waits = _quiet_worker(monkeypatch)
    worker.wait_for_and_dispatch_events(1.0)
    assert waits == [30.0]


@pytest.mark.parametrize("state", [{"keepalived_conns": ["conn"]}, {"pending_conns": ["conn"]}, {"alive": False}])
def test_a_worker_with_connections_to_time_out_keeps_gunicorns_wait(monkeypatch, state):
    worker, waits = _quiet_worker(monkeypatch, **state)
    worker.wait_for_and_dispatch_events(1.0)
    assert waits == [1.0]


def test_sync_workers_are_left_alone(monkeypatch):
    from gunicorn.workers.sync import SyncWorker

    monkeypatch.setattr(gunicorn_conf, "PR_SET_PDEATHSIG", -1)
    worker = object.__new__(SyncWorker)
    gunicorn_conf.post_fork(None, worker)
    assert "wait_for_and_dispatch_events" not in vars(worker)


def test_the_master_waits_for_signals_up_to_the_idle_wait():
    seen = []
    server = SimpleNamespace(
        cfg=SimpleNamespace(timeout=120), wait_for_signals=lambda timeout=1.0: seen.append(timeout)
    )
    gunicorn_conf.on_starting(server)
    server.wait_for_signals(timeout=1.0)
    assert seen == [30.0]


def test_the_gunicorn_internals_the_config_leans_on_are_there():
    from gunicorn.arbiter import Arbiter
    from gunicorn.workers.gthread import ThreadWorker

    assert "timeout" in Arbiter.wait_for_signals.__code__.co_varnames
    assert "wait_for_signals(timeout=" in _source(Arbiter.run)
    assert "timeout" in ThreadWorker.wait_for_and_dispatch_events.__code__.co_varnames
    init = _source(ThreadWorker.__init__)
    assert "self.keepalived_conns" in init
    assert "self.pending_conns" in init


def _source(function) -> str:
    import inspect

    return inspect.getsource(function)


def test_webhook_thread_constants_keep_the_gap_short():
    assert 0 < webhook_worker.POKE_MIN_GAP <= 0.1


# --- the idle SQLite daemon: no lease to renew, no look without a write -------------


class CountingWatcher(watchers.DatagramWatcher):
    """The daemon's own SQLite watcher, counting its safety looks."""

    looks = 0

    def changed(self) -> bool:
        self.looks += 1
        return super().changed()


@pytest.mark.django_db(transaction=True)
def test_the_idle_sqlite_daemon_neither_looks_nor_writes_until_another_process_writes(tmp_path, shared_file, settings):
    """A look every 2 s, renewing a lease row, was all an idle daemon woke
    for; now its lease is a lock and it looks when the database was written
    (expiry/wal_watch.py). PRAGMA data_version on this connection moves
    whenever another connection commits. Nor does it sweep (its sweep on the
    clock would come every second here): it sweeps after a look saw a write."""
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's daemon (PostgreSQL's looks every 2 s)")
    settings.EXPIRY_SWEEP_INTERVAL = 1.0
    watcher = CountingWatcher(path=str(tmp_path / "db.wakeup"))  # no notice reaches it
    service = build_service(watcher=watcher, webhooks=False, reminders=False)
    daemon, housekeeper = service.daemon, service.housekeeper

    def data_version() -> int:
        connection.ensure_connection()
        return connection.connection.execute("PRAGMA data_version").fetchone()[0]

    try:
        service.start()
        assert wait_until(lambda: daemon.leading and watcher.listening and watcher.writes.watching, 10)
        assert watcher.pickup_interval(0.05) == watchers.WATCHED_INTERVAL
        # Settled: the start's own looks are over once a pause passes without one.
        looks, settled_by = -1, time.monotonic() + 15
        while looks != watcher.looks and time.monotonic() < settled_by:
            looks = watcher.looks
            time.sleep(watchers.SAFETY_INTERVAL + 0.5)
        version, writes, sweeps = data_version(), watcher.writes.writes_seen, housekeeper.sweeps
        time.sleep(2 * watchers.SAFETY_INTERVAL + 0.5)
        if watcher.writes.writes_seen == writes:  # nothing wrote to the database, the daemon included
            assert watcher.looks == looks, "the idle daemon looked with nothing written"
            assert housekeeper.sweeps == sweeps, "the idle daemon swept with nothing written"
            assert data_version() == version
        else:  # another test's leftover wrote: every look answered a write, none came by the clock
            assert watcher.looks - looks <= watcher.writes.writes_seen - writes
            assert housekeeper.sweeps - sweeps <= watcher.looks - looks
        sweeps = housekeeper.sweeps

        writes = watcher.writes.writes_seen
        share = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1))
        # The write watch promises a look within one pause of a write (the
        # first look may come mid-commit and miss it); the clock's own look
        # is WATCHED_INTERVAL away, far beyond this wait.
        pickup_wait = 5.0
        assert pickup_wait < watchers.WATCHED_INTERVAL
        assert wait_until(lambda: service.scheduler.scheduled_deadline(share.pk) is not None, pickup_wait, 0.01)
        assert watcher.writes.writes_seen > writes, "found without the write watch"
        assert watcher.looks > looks
        assert wait_until(lambda: housekeeper.sweeps > sweeps, pickup_wait, 0.01), "no sweep after the write"
    finally:
        service.stop()
        service.join(5)
        service.close()
