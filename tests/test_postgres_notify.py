"""PostgreSQL: daemons learn of new and renewed shares through LISTEN/NOTIFY,
and fall back to polling while the LISTEN connection is down."""

import queue
import select
import threading
from datetime import timedelta
from types import SimpleNamespace

import psycopg
import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from expiry import watchers
from expiry.notify import CHANNEL, parse_payload
from expiry.service import ExpiryService, build_service
from expiry.watchers import UP, NotifyListener, NotifyWatcher, conninfo_for
from sharing.models import Share
from tests.helpers import create_share, in_other_connection, wait_until

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif("connection.vendor != 'postgresql'", reason="needs PostgreSQL"),
]

NEVER = 3600.0  # an interval that does not come round during a test


@pytest.fixture
def listener():
    with psycopg.connect(conninfo_for("default"), autocommit=True) as conn:
        conn.execute(f"LISTEN {CHANNEL}")
        yield conn


def notify_daemon(*, pickup_interval: float = NEVER, **watcher_options) -> ExpiryService:
    watcher_options.setdefault("safety_interval", NEVER)
    return build_service(
        refresh_interval=NEVER,
        watcher=NotifyWatcher(**watcher_options),
        pickup_interval=pickup_interval,
        lease="off",
        webhooks=False,
    )


def stop_daemon(service: ExpiryService) -> None:
    service.stop()
    service.join(5)
    service.close()


def status_of(share: Share) -> str:
    share.refresh_from_db()
    return share.status


def terminate(where: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            f"WHERE datname = current_database() AND pid <> pg_backend_pid() AND {where}"
        )
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_a_committed_creation_and_renewal_are_announced_with_id_and_deadline(shared_file, listener):
    share = create_share(shared_file, 60)
    share.set_expiry(share.expires_at + timedelta(seconds=30))
    payloads = [n.payload for n in listener.notifies(timeout=2, stop_after=2)]
    assert [parse_payload(p) for p in payloads] == [
        (share.pk, share.expires_at.timestamp() - 30),
        (share.pk, share.expires_at.timestamp()),
    ]


@pytest.mark.django_db(transaction=True)
def test_the_notify_runs_after_the_commit_never_inside_the_write_transaction(shared_file):
    with CaptureQueriesContext(connection) as queries:
        with transaction.atomic():
            create_share(shared_file, 60)
            inside = [q["sql"] for q in queries.captured_queries if "pg_notify" in q["sql"]]
        after = [q["sql"] for q in queries.captured_queries if "pg_notify" in q["sql"]]
    assert inside == []
    assert len(after) == 1


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_creation_is_not_announced(shared_file, listener):
    def create_then_fail():
        with transaction.atomic():
            create_share(shared_file, 60)
            raise RuntimeError("rolled back")

    with pytest.raises(RuntimeError):
        create_then_fail()
    assert list(listener.notifies(timeout=0.3)) == []


@pytest.mark.django_db(transaction=True)
def test_a_share_created_after_the_refresh_is_expired_on_time_through_notify_alone(shared_file):
    service = notify_daemon()  # no refresh, no pick-up read during the test: NOTIFY only
    try:
        service.start()
        assert wait_until(lambda: service.scheduler.watcher.listening, 5)
        share = in_other_connection(lambda: create_share(shared_file, 0.5))
        assert wait_until(lambda: status_of(share) == Share.Status.EXPIRED, 5)
    finally:
        stop_daemon(service)
    assert share.lateness < timedelta(milliseconds=100)
    assert service.scheduler.stats.pickups >= 1


@pytest.mark.django_db(transaction=True)
def test_without_a_listen_connection_the_daemon_polls_instead(shared_file):
    unreachable = "host=127.0.0.1 port=1 dbname=nothing connect_timeout=2"
    service = notify_daemon(conninfo=unreachable, safety_interval=2.0, pickup_interval=0.05)
    watcher = service.scheduler.watcher
    try:
        service.start()
        assert wait_until(lambda: watcher.listener is not None and watcher.listener.failures >= 1, 5)
        share = in_other_connection(lambda: create_share(shared_file, 0.5))
        assert wait_until(lambda: status_of(share) == Share.Status.EXPIRED, 5)
        assert not watcher.listening
        assert watcher.pickup_interval(0.05) == 0.05
    finally:
        stop_daemon(service)
    assert share.lateness < timedelta(milliseconds=200)


@pytest.mark.django_db(transaction=True)
def test_a_dropped_listen_connection_is_reconnected_and_notices_flow_again(shared_file):
    service = notify_daemon()
    watcher = service.scheduler.watcher
    try:
        service.start()
        assert wait_until(lambda: watcher.listening, 5)
        assert terminate("application_name = 'runexpiry-listen'") == 1
        assert wait_until(lambda: watcher.listener.connections == 2, 5)  # back-off 0.1 s, then LISTEN again
        assert wait_until(lambda: watcher.listening, 2)
        share = in_other_connection(lambda: create_share(shared_file, 0.5))
        assert wait_until(lambda: status_of(share) == Share.Status.EXPIRED, 5)
    finally:
        stop_daemon(service)
    assert share.lateness < timedelta(milliseconds=100)


@pytest.mark.django_db(transaction=True)
def test_the_daemon_thread_survives_its_connection_being_killed_and_still_expires(shared_file):
    share = create_share(shared_file, 1.0)
    service = notify_daemon()
    try:
        service.start()
        assert wait_until(lambda: service.scheduler.scheduled_deadline(share.pk) is not None, 5)
        assert terminate("application_name <> 'runexpiry-listen'") >= 1  # the daemon's own session
        assert wait_until(lambda: status_of(share) == Share.Status.EXPIRED, 5)
        # The thread met the killed session in whichever step queried first
        # (expiry or housekeeping: both run on it), logged it and went on.
        assert service.daemon.errors + service.housekeeper.errors >= 1
        assert service.daemon.is_alive()
    finally:
        stop_daemon(service)
    assert not service.daemon.is_alive()


@pytest.mark.django_db(transaction=True)
def test_the_listener_waits_for_a_notice_or_its_stop_with_no_timeout(monkeypatch):
    """An idle LISTEN thread costs no wake-ups: it blocks in select() on the
    connection and its stop socket, with no timeout (psycopg's notifies()
    wait woke every 0.1 s), and still takes each notice and each stop at once."""
    waits = []

    def recording_select(readers, writers, errors, *timeout):
        waits.append(timeout)
        return select.select(readers, writers, errors, *timeout)

    monkeypatch.setattr(watchers, "select", SimpleNamespace(select=recording_select))
    notices, wake = queue.Queue(), threading.Event()
    listener = NotifyListener(conninfo_for("default"), CHANNEL, notices, wake)
    listener.start()
    try:
        assert notices.get(timeout=10) == UP
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, %s)", [CHANNEL, "42:1900000000.5"])
        assert notices.get(timeout=10) == (42, 1900000000.5)
        assert wake.is_set()
    finally:
        listener.stop()
        listener.join(10)
    assert not listener.is_alive()
    assert waits
    assert all(timeout == () for timeout in waits)
