"""The housekeeper's sweep where the daemon sees every other writer's commit
(SQLite): a sweep that found nothing waits for a write instead of the clock,
so an idle daemon does not wake for it; one that found work keeps its clock.
The clock is injected; nothing here sleeps."""

from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from expiry import housekeeping
from expiry.housekeeping import Housekeeper
from expiry.service import build_service
from expiry.watchers import Watcher
from sharing.models import Share, StoredFile

pytestmark = pytest.mark.django_db(transaction=True)

SWEEP = 5.0
PURGE = 600.0


def keeper(clock: list[float], *, after_writes: bool = True) -> Housekeeper:
    housekeeper = Housekeeper(
        clock=lambda: clock[0], sweep_interval=SWEEP, purge_interval=PURGE, sweeps_after_writes=after_writes
    )
    housekeeper.next_purge = clock[0] + PURGE  # only the sweep in these tests
    return housekeeper


def pending_download(shared_file) -> Share:
    share = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1))
    assert Share.objects.get(pk=share.pk).reserve_bytes(first=0, end=10) is not None
    return share


def test_a_sweep_that_found_nothing_waits_for_a_write(shared_file):
    clock = [100.0]
    housekeeper = keeper(clock)
    assert housekeeper.step(room=10)  # the sweep at start
    assert housekeeper.sweeps == 1
    assert housekeeper.seconds_until_next(room=10) == pytest.approx(PURGE)  # no wake-up for the sweep
    clock[0] += 3 * SWEEP
    with CaptureQueriesContext(connection) as queries:
        assert not housekeeper.step(room=10)
    assert (housekeeper.sweeps, len(queries)) == (1, 0)

    housekeeper.note_written()  # another connection committed
    assert housekeeper.seconds_until_next(room=10) == 0.0
    assert housekeeper.step(room=10)
    assert housekeeper.sweeps == 2


def test_the_sweep_after_a_write_finds_what_it_wrote(shared_file):
    clock = [100.0]
    housekeeper = keeper(clock)
    assert housekeeper.step(room=10)
    share = pending_download(shared_file)
    housekeeper.note_written()
    assert housekeeper.seconds_until_next(room=10) == pytest.approx(SWEEP)  # one sweep an interval at most
    assert not housekeeper.step(room=10)
    clock[0] += SWEEP
    assert housekeeper.step(room=10)
    assert housekeeper.folded == 1
    assert Share.objects.get(pk=share.pk).download_count == 1


def test_a_sweep_that_found_work_keeps_its_clock(shared_file):
    """More may be left (a batch limit), or come of what it did: look again
    after the interval, not only after a write."""
    clock = [100.0]
    housekeeper = keeper(clock)
    pending_download(shared_file)
    assert housekeeper.step(room=10)
    assert housekeeper.folded == 1
    assert housekeeper.seconds_until_next(room=10) == pytest.approx(SWEEP)
    clock[0] += SWEEP
    assert housekeeper.step(room=10)
    assert housekeeper.sweeps == 2
    assert housekeeper.seconds_until_next(room=10) == pytest.approx(PURGE - SWEEP)  # found nothing: waits


def test_a_sweep_that_reaped_a_file_keeps_its_clock(alice, media_root):
    ephemeral = StoredFile.create_from_upload(
        owner=alice, upload=SimpleUploadedFile("once.txt", b"once"), delete_when_unshared=True
    )
    share = Share.create_for(file=ephemeral, expires_at=timezone.now() + timedelta(hours=1))
    Share.objects.filter(pk=share.pk).update(  # as a crash between an unshare's commit and its reap left it
        status=Share.Status.UNSHARED, end_reason="unshared", ended_at=timezone.now()
    )
    clock = [100.0]
    housekeeper = keeper(clock)
    assert housekeeper.step(room=10)
    assert housekeeper.reaped == 1
    assert housekeeper.seconds_until_next(room=10) == pytest.approx(SWEEP)


def test_a_failed_sweep_is_tried_again_on_the_clock(shared_file, monkeypatch):
    clock = [100.0]
    housekeeper = keeper(clock)

    def unreachable(*args, **kwargs):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(housekeeping, "fold_pending", unreachable)
    assert housekeeper.step(room=10)
    assert housekeeper.errors == 1
    monkeypatch.undo()
    clock[0] += housekeeping.RETRY_DELAY
    assert housekeeper.step(room=10)
    assert (housekeeper.sweeps, housekeeper.errors) == (2, 1)


def test_where_writes_are_not_seen_the_sweep_keeps_its_clock(shared_file):
    """PostgreSQL: downloads send no notice the daemon would see."""
    clock = [100.0]
    housekeeper = keeper(clock, after_writes=False)
    assert housekeeper.step(room=10)
    assert housekeeper.seconds_until_next(room=10) == pytest.approx(SWEEP)
    clock[0] += SWEEP
    assert housekeeper.step(room=10)
    assert housekeeper.sweeps == 2


def test_the_service_sweeps_after_writes_only_where_its_watcher_sees_them():
    service = build_service(webhooks=False, reminders=False, lease="off")
    watcher = service.scheduler.watcher
    assert service.housekeeper.sweeps_after_writes is watcher.sees_other_writers
    assert watcher.sees_other_writers is (connection.vendor == "sqlite")


def test_a_daemon_that_takes_the_lease_sweeps_again():
    """What others wrote while it stood by, no watcher of its saw."""
    service = build_service(watcher=Watcher(), webhooks=False, reminders=False, lease="off")
    service.daemon.lease = SimpleNamespace(name="expiry", owner="this daemon")  # for the log line
    service.housekeeper.swept_clean = True
    service.daemon.change_role(True)
    assert not service.housekeeper.swept_clean
