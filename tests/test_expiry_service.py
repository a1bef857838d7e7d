"""build_service(): the daemon as runexpiry runs it, built once for every
entry point. Real database, real threads, no mocks."""

import io
import logging
import threading
import time
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone
from freezegun import freeze_time

from expiry.lease import LeaseKeeper
from expiry.lease_lock import LockLease
from expiry.models import Lease
from expiry.service import build_service
from sharing.models import Share
from tests.helpers import create_share, wait_until


def status_of(share: Share) -> str:
    share.refresh_from_db()
    return share.status


@pytest.mark.django_db(transaction=True)
def test_the_built_daemon_expires_a_due_share_and_stops_cleanly(shared_file, caplog):
    share = create_share(shared_file, 0.5)
    service = build_service()  # runexpiry's defaults: a lease on SQLite, the webhook thread, reminders
    with caplog.at_level(logging.INFO, logger="expiry"):
        try:
            service.start()
            assert wait_until(lambda: status_of(share) == Share.Status.EXPIRED, 5)
        finally:
            service.stop()
            service.join(5)
            service.close()

    assert not service.daemon.is_alive()
    assert not service.webhooks.is_alive()
    checkpointer = service.daemon.checkpointer  # SQLite only; stopped, not joined, by the daemon
    assert checkpointer is None or wait_until(lambda: not checkpointer.is_alive(), 2)
    assert share.ended_at >= share.expires_at
    assert service.scheduler.stats.expired + service.scheduler.stats.caught_up == 1
    assert service.daemon.errors == 0
    messages = [record.getMessage() for record in caplog.records if record.name == "expiry"]
    assert any(m.startswith(f"runexpiry started on {connection.vendor} (") for m in messages)
    assert any(m.startswith("runexpiry stopped after ") for m in messages)
    if connection.vendor == "sqlite":
        assert isinstance(service.lease, LockLease)  # a lock beside the database file
        assert Lease.objects.get(name="runexpiry").expires_at <= timezone.now()  # released on the way out
    else:
        assert service.lease is None  # PostgreSQL: every daemon works


@pytest.mark.django_db(transaction=True)
def test_once_prints_how_many_shares_it_expired_and_starts_no_thread(shared_file, tmp_path):
    with freeze_time("2026-03-01 12:00:00") as frozen:
        due = [create_share(shared_file, seconds) for seconds in (1, 2, 3)]
        pending = create_share(shared_file, 60)
        frozen.tick(5)
        out = io.StringIO()
        threads_before = set(threading.enumerate())
        call_command("runexpiry", "--once", "--log-expired-ids", str(tmp_path / "ids.log"), stdout=out)
        started = set(threading.enumerate()) - threads_before

    assert out.getvalue() == "Expired 3 shares.\n"
    assert {status_of(share) for share in due} == {Share.Status.EXPIRED}
    assert status_of(pending) == Share.Status.ACTIVE
    logged = sorted(int(line.split()[0]) for line in (tmp_path / "ids.log").read_text().splitlines())
    assert logged == sorted(share.pk for share in due)
    assert not [thread.name for thread in started if thread.name in ("runexpiry", "webhooks")]


@pytest.mark.django_db(transaction=True)
def test_the_built_scheduler_runs_on_an_injected_clock_without_threads(shared_file):
    with freeze_time("2026-03-01 12:00:00") as frozen:
        service = build_service(clock=time.time, lease="on", webhooks=False)
        assert service.scheduler.clock is service.scheduler.reminders.clock is service.lease.clock
        share = create_share(shared_file, 5)
        while service.scheduler.step():
            pass
        assert service.scheduler.scheduled_deadline(share.pk) == share.expires_at.timestamp()

        frozen.tick(5)
        assert service.scheduler.step()
        service.close()
    assert status_of(share) == Share.Status.EXPIRED
    assert share.lateness == timedelta(0)


def test_options_left_out_take_runexpirys_defaults_from_the_settings(settings):
    settings.EXPIRY_REFRESH_INTERVAL = 120.0
    settings.EXPIRY_PICKUP_INTERVAL = 0.2
    settings.EXPIRY_COALESCE = 0.001
    settings.EXPIRY_COALESCE_FULL_RATE = 2_000.0
    settings.EXPIRY_LEASE_TTL = 7.0
    service = build_service(lease="on", webhooks=False)
    assert service.scheduler.refresh_interval == 120.0
    assert service.scheduler.pickup_interval == 0.2
    assert service.scheduler.coalesce == 0.001
    assert service.scheduler.coalescing.full_rate == 2_000.0
    if connection.vendor == "sqlite":
        assert isinstance(service.lease, LockLease)  # a lock: no ttl
    else:
        assert type(service.lease) is LeaseKeeper
        assert service.lease.ttl == 7.0
    assert service.webhooks is None

    given = build_service(
        refresh_interval=30.0, pickup_interval=0.5, coalesce=0.0, coalesce_full_rate=0, lease="off", reminders=False
    )
    assert (given.scheduler.refresh_interval, given.scheduler.pickup_interval) == (30.0, 0.5)
    assert given.scheduler.coalesce == 0.0
    assert given.scheduler.coalescing.full_rate is None  # 0: the whole slack at any rate
    assert given.lease is None
    assert given.webhooks is not None


def test_an_unknown_lease_choice_is_refused():
    with pytest.raises(ValueError, match="lease must be one of"):
        build_service(lease="sometimes")
