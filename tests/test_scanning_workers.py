"""The scan workers against a real clamd (tests.clamd): stopped mid-run
(nothing is served unscanned, everything is scanned once it is back, no
scan lost or done twice by two workers), the worker's memory while a 1 GB
file streams through it, and the time from an upload's end to its link
serving it. Figures are printed, never asserted."""

import os
import time
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import close_old_connections
from django.test import Client
from django.utils import timezone

from scanning.worker import ScanThread, ScanWorker
from sharing.models import ScanState, Share, StoredFile
from tests.clamd import EICAR
from tests.helpers import start_manage, stop, storage_env, wait_for_text

pytestmark = pytest.mark.django_db(transaction=True)


def stored_file(owner, data: bytes, name: str) -> StoredFile:
    return StoredFile.create_from_upload(owner=owner, upload=SimpleUploadedFile(name, data))


def share_of(stored: StoredFile) -> Share:
    return Share.create_for(file=stored, expires_at=timezone.now() + timedelta(hours=1))


def link_status(share: Share) -> int:
    return Client().get(f"/s/{share.token}").status_code


def wait_until(condition, what: str, limit: float = 120.0) -> None:
    """Poll `condition` (a bound on a hang, not a timed assertion)."""
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, f"still waiting for {what}"
        time.sleep(0.05)


class CountingWorker(ScanWorker):
    """A ScanWorker that notes each file whose verdict it recorded."""

    def __init__(self, verdicts: list, **kwargs):
        super().__init__(**kwargs)
        self.verdicts = verdicts

    def scan(self, claim, stored):
        failed = self.failed
        super().scan(claim, stored)
        if self.failed == failed:
            self.verdicts.append(stored.pk)


def due() -> int:
    close_old_connections()
    return StoredFile.objects.filter(scan_due_at__isnull=False).count()


@pytest.mark.parametrize("storage", ["disk", "bucket"])
def test_clamd_stopped_mid_run_withholds_then_scans_each_file_once_with_two_workers(
    storage, clamd, alice, settings, request
):
    if storage == "bucket":
        request.getfixturevalue("bucket_storage")
    settings.SCAN_RETRY_BASE, settings.SCAN_RETRY_MAX, settings.SCAN_FAILED_AFTER = 0.05, 0.2, 2
    verdicts: list[int] = []
    threads = [ScanThread(CountingWorker(verdicts, name=f"worker-{n}"), poll_interval=0.02) for n in range(2)]
    for thread in threads:
        thread.start()
    try:
        first = [stored_file(alice, f"first {n}\n".encode() * 50, f"first-{n}.txt") for n in range(6)]
        wait_until(lambda: due() == 0, "the first files' scans")

        clamd.stop()
        later = [stored_file(alice, f"later {n}\n".encode() * 50, f"later-{n}.txt") for n in range(6)]
        later.append(stored_file(alice, EICAR, "eicar.com"))
        shares = [share_of(stored) for stored in later]
        # Both workers see clamd gone a few times (backing off, claiming
        # nothing) while the new files wait, and no link sends them.
        wait_until(lambda: all(t.unanswered_pings >= 3 for t in threads), "the workers to look at clamd gone")
        assert {link_status(share) for share in shares} == {503}
        assert not set(verdicts) & {stored.pk for stored in later}

        clamd.start()
        wait_until(lambda: due() == 0, "the scans once clamd is back")
    finally:
        for thread in threads:
            thread.stop()
        for thread in threads:
            thread.join(30)
    close_old_connections()
    ids = [stored.pk for stored in first + later]
    assert sorted(verdicts) == sorted(ids)  # each file's verdict recorded once, by one worker
    states = dict(StoredFile.objects.filter(pk__in=ids).values_list("pk", "scan_state"))
    assert states.pop(later[-1].pk) == ScanState.INFECTED
    assert set(states.values()) == {ScanState.CLEAN}
    assert [link_status(share) for share in shares] == [200] * 6 + [410]
    print(
        f"\nclamd stopped mid-run ({storage}): {len(ids)} files, verdicts by worker: "
        f"{[t.worker.scanned for t in threads]}, unanswered pings while down: {[t.unanswered_pings for t in threads]}"
    )


def test_a_scan_that_finds_clamd_gone_gives_the_file_back_for_later_and_withholds_it(clamd, alice, settings):
    stored = stored_file(alice, b"scanned later\n", "later.txt")
    share = share_of(stored)
    clamd.stop()
    worker = ScanWorker()
    assert worker.run_once()  # claimed, tried, given back
    stored.refresh_from_db()
    assert (worker.failed, stored.scan_state, stored.scan_claimed_by) == (1, ScanState.PENDING, "")
    assert stored.scan_due_at > timezone.now()
    assert link_status(share) == 503
    clamd.start()
    StoredFile.objects.filter(pk=stored.pk).update(scan_due_at=timezone.now())
    assert worker.run_once()
    stored.refresh_from_db()
    assert (stored.scan_state, stored.scan_attempts) == (ScanState.CLEAN, 2)
    assert link_status(share) == 200


def peak_rss_kib() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))


def current_rss_kib() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


def test_the_worker_streams_a_1_gb_file_in_flat_memory(clamd, alice, settings):
    """The file's last bytes are the EICAR string: found only if all of it
    went through. Peak RSS is measured around the scan alone (the peak is
    reset first: /proc/self/clear_refs)."""
    size = 1024**3
    media = settings.MEDIA_ROOT
    os.makedirs(media, exist_ok=True)
    name = "big-scan.bin"
    with open(os.path.join(media, name), "wb") as handle:
        handle.truncate(size - len(EICAR))
        handle.seek(size - len(EICAR))
        handle.write(EICAR)
    stored = StoredFile.objects.create(
        owner=alice,
        content=name,
        name=name,
        size=size,
        content_type="application/octet-stream",
        sha256="0" * 64,
        scan_state=ScanState.PENDING,
        scan_due_at=timezone.now(),
    )
    worker = ScanWorker()
    before = current_rss_kib()
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")  # reset VmHWM to the current RSS
    started = time.monotonic()
    assert worker.run_once()
    took = time.monotonic() - started
    peak = peak_rss_kib()
    stored.refresh_from_db()
    assert stored.scan_state == ScanState.INFECTED
    print(
        f"\n1 GB scan: {took:.1f} s ({size / took / 1024**2:.0f} MB/s); worker RSS before {before / 1024:.1f} MB, "
        f"peak during the scan {peak / 1024:.1f} MB (+{(peak - before) / 1024:.1f} MB)"
    )


@pytest.mark.parametrize("storage", ["disk", "bucket"])
def test_time_from_upload_complete_to_servable_for_100_mb(storage, clamd, alice, alice_client, settings, request):
    if storage == "bucket":
        request.getfixturevalue("bucket_storage")
    data = os.urandom(1024 * 1024) * 100
    thread = ScanThread(ScanWorker(), poll_interval=0.02)
    thread.start()
    try:
        response = alice_client.post("/api/files/", {"file": SimpleUploadedFile("hundred.bin", data)})
        uploaded = time.monotonic()
        assert response.status_code == 201
        share = share_of(StoredFile.objects.get(pk=response.json()["id"]))
        while (status := Client().head(f"/s/{share.token}").status_code) == 503:
            time.sleep(0.01)
        servable = time.monotonic()
    finally:
        thread.stop()
        thread.join(30)
    assert status == 200
    print(f"\n100 MB ({storage}): servable {servable - uploaded:.2f} s after its upload completed")


def test_runscans_scans_and_stops_on_sigterm(clamd, alice, tmp_path, media_root):
    """The command itself: it scans what is due, and SIGTERM ends it with "Done." and 0."""
    stored = stored_file(alice, b"a file for the command\n", "command.txt")
    output = tmp_path / "runscans.out"
    process = start_manage("runscans", output=output, CLAMD_URL=clamd.url, **storage_env(media_root))
    try:
        wait_for_text(output, "runscans started", 60, process=process)
        wait_until(lambda: due() == 0, "the command's scan")
        process.terminate()
        assert process.wait(30) == 0
    finally:
        stop(process)
    assert "Done." in output.read_text()
    stored.refresh_from_db()
    assert stored.scan_state == ScanState.CLEAN
