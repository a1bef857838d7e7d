"""Fault and load tests: several real runexpiry processes, SIGKILL, restarts.

Each daemon appends the ids it expired (RETURNING, after commit) to a file
given with --log-expired-ids, so expiries are counted across processes and
crashes; the database's ended_at must match what was logged. On SQLite one
daemon holds the lease (a lock on a file beside the database) and the others
stand by; on PostgreSQL all of them work (SKIP LOCKED), except in the
takeover test, which turns the lease (a row) on.
"""

import random
import statistics
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from sharing.models import Share, ShareEvent
from tests.helpers import bulk_shares, kill, report, start_manage, stop, wait_for_text, wait_until

pytestmark = pytest.mark.fault


def expired_count() -> int:
    return Share.objects.filter(status=Share.Status.EXPIRED).count()


def start_daemon(tmp_path: Path, name: str, *options: str):
    output = tmp_path / f"{name}.out"
    log = tmp_path / f"{name}.ids"
    process = start_manage("runexpiry", "--log-expired-ids", str(log), *options, output=output)
    return process, output, log


def read_id_logs(*paths: Path) -> tuple[Counter, dict[int, float]]:
    """How often each id was logged, and the ended_at each was logged with."""
    counts, stamps = Counter(), {}
    for path in paths:
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            share_id, stamp, _logged = line.split()
            counts[int(share_id)] += 1
            stamps[int(share_id)] = float(stamp)
    return counts, stamps


def audit(ids: list[int], counts: Counter, stamps: dict[int, float]) -> dict:
    """Compare the database with the id logs; return the figures."""
    wanted = set(ids)
    rows = Share.objects.filter(pk__range=(min(ids), max(ids)))  # not IN (50,000 parameters)
    rows = rows.values_list("id", "status", "end_reason", "expires_at", "ended_at")
    not_expired = early = mismatched = 0
    lateness = []
    for share_id, status, end_reason, expires_at, ended_at in rows.iterator(5000):
        if share_id not in wanted:
            continue
        if status != Share.Status.EXPIRED or end_reason != Share.EndReason.EXPIRED:
            not_expired += 1
            continue
        if ended_at < expires_at:
            early += 1
        lateness.append((ended_at - expires_at).total_seconds() * 1000)
        if share_id in stamps and abs(stamps[share_id] - ended_at.timestamp()) > 1e-6:
            mismatched += 1  # ended_at was written again after it was logged
    lateness.sort()
    return {
        "shares": len(ids),
        "not_expired": not_expired,
        "expired_twice": sum(1 for n in counts.values() if n > 1),
        "expired_early": early,
        "ended_at_rewritten": mismatched,
        "not_logged": len(set(ids) - set(counts)),
        "lateness_p50_ms": round(statistics.median(lateness), 1) if lateness else None,
        "lateness_p99_ms": round(lateness[int(len(lateness) * 0.99) - 1], 1) if lateness else None,
    }


@pytest.mark.timeout(180)
@pytest.mark.django_db(transaction=True)
def test_a_daemon_killed_mid_burst_restarts_and_every_share_expires_exactly_once(shared_file, tmp_path, capsys):
    count, spread = 50_000, 3.0
    # 10 s out: room for the daemon to start on a loaded machine (checked below).
    ids = bulk_shares(shared_file, [spread * i / count for i in range(count)], start_in=10)
    first_deadline = time.time() + 10

    # SQLite: the kernel freed the dead daemon's lease lock; the restarted one takes it at once.
    first, first_out, first_log = start_daemon(tmp_path, "first")
    second = None
    try:
        wait_for_text(first_out, "refresh:", 30, process=first)
        assert time.time() < first_deadline, "the daemon took longer to start than the shares had to their deadlines"
        # SIGKILL somewhere in the middle of the burst.
        assert wait_until(lambda: expired_count() >= count // 5, first_deadline + spread + 20 - time.time(), 0.005)
        killed_at = time.time()
        kill(first)
        at_kill = expired_count()
        assert at_kill < count * 0.9, f"the burst was over ({at_kill} expired) before the kill"

        second, second_out, second_log = start_daemon(tmp_path, "second")
        assert wait_until(lambda: expired_count() == count, 90, 0.05), expired_count()
        recovered_after = time.time() - killed_at
    finally:
        kill(first)
        if second is not None:
            _, err = stop(second)
    assert second.returncode == 0, err
    if connection.vendor == "sqlite":
        assert "standing by" not in second_out.read_text()  # no dead lease to wait out

    counts, stamps = read_id_logs(first_log, second_log)
    figures = audit(ids, counts, stamps)
    report(
        capsys,
        f"{connection.vendor}: SIGKILL mid-burst of {count} shares, then restart",
        expired_at_kill=at_kill,
        all_expired_after_kill_s=round(recovered_after, 2),
        **figures,
    )
    assert figures["not_expired"] == 0
    assert figures["expired_twice"] == 0
    assert figures["expired_early"] == 0
    assert figures["ended_at_rewritten"] == 0
    # Only the batch committed in the instant before the SIGKILL can be unlogged.
    assert figures["not_logged"] <= 5000
    assert sum(counts.values()) + figures["not_logged"] == count


@pytest.mark.timeout(180)
@pytest.mark.django_db(transaction=True)
def test_three_daemons_expire_twenty_thousand_mixed_deadlines_exactly_once_and_never_early(
    shared_file, tmp_path, capsys
):
    count, spread = 20_000, 4.0
    rng = random.Random(5)
    ids = bulk_shares(shared_file, [rng.uniform(0, spread) for _ in range(count)], start_in=5)
    first_deadline = time.time() + 5
    daemons = [start_daemon(tmp_path, f"daemon{n}") for n in range(3)]
    try:
        outputs = [output for _, output, _ in daemons]

        def ready():
            texts = [path.read_text() if path.exists() else "" for path in outputs]
            working = sum("refresh:" in text for text in texts)
            standing_by = sum("standing by" in text for text in texts)
            return (working, standing_by) in {(3, 0), (1, 2)}

        assert wait_until(ready, 30), [p.read_text() for p in outputs]
        # More, created one by one while the daemons run (pick-up / NOTIFY path).
        late = [
            Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(seconds=rng.uniform(0.2, 3)))
            for _ in range(200)
        ]
        ids += [share.pk for share in late]
        remaining = first_deadline + spread + 30 - time.time()
        assert wait_until(lambda: expired_count() == len(ids), remaining, 0.05), expired_count()
    finally:
        results = []
        for process, _, _ in daemons:
            _, err = stop(process)
            results.append((process.returncode, err))
    assert [code for code, _ in results] == [0, 0, 0], results

    logs = [log for _, _, log in daemons]
    counts, stamps = read_id_logs(*logs)
    per_daemon = [sum(1 for _ in log.open()) if log.exists() else 0 for log in logs]
    figures = audit(ids, counts, stamps)
    report(capsys, f"{connection.vendor}: 3 daemons, {len(ids)} shares", expired_per_daemon=per_daemon, **figures)
    assert figures["not_expired"] == 0
    assert figures["expired_twice"] == 0
    assert figures["expired_early"] == 0
    assert figures["ended_at_rewritten"] == 0
    assert figures["not_logged"] == 0
    assert sum(per_daemon) == len(ids)
    # The history agrees: one expired event per expiry, whichever daemon made it.
    events = ShareEvent.objects.filter(kind=ShareEvent.Kind.EXPIRED, share_id__gte=min(ids), share_id__lte=max(ids))
    assert events.count() == len(ids)
    assert events.values("share_id").distinct().count() == len(ids)
    outputs = "".join(output.read_text() for _, output, _ in daemons)
    assert "database is locked" not in outputs
    if connection.vendor == "sqlite":
        assert sorted(per_daemon)[:2] == [0, 0], "stand-bys expired shares"


@pytest.mark.timeout(120)
@pytest.mark.django_db(transaction=True)
def test_a_stand_by_takes_over_from_a_killed_lease_holder(shared_file, tmp_path, capsys):
    lease = ["--lease", "on"]  # the default on SQLite; PostgreSQL needs none, but supports it
    holder, holder_out, holder_log = start_daemon(tmp_path, "holder", *lease)
    standby = None
    try:
        wait_for_text(holder_out, "acquired", 30, process=holder)
        standby, standby_out, standby_log = start_daemon(tmp_path, "standby", *lease)
        wait_for_text(standby_out, "standing by", 30, process=standby)

        ids = bulk_shares(shared_file, [3 * i / 500 for i in range(500)], start_in=1)
        time.sleep(0.5)  # let the holder pick them up (and renew a row lease)
        killed_at = time.time()
        kill(holder)
        took_over_at = wait_for_text(standby_out, "acquired", 30, process=standby)
        takeover = took_over_at - killed_at
        assert wait_until(lambda: expired_count() == len(ids), 30, 0.05), expired_count()
    finally:
        kill(holder)
        if standby is not None:
            _, err = stop(standby)
    assert standby.returncode == 0, err
    assert "lease runexpiry released" in standby_out.read_text()

    counts, stamps = read_id_logs(holder_log, standby_log)
    figures = audit(ids, counts, stamps)
    kind = "a lock" if connection.vendor == "sqlite" else "a row, ttl 5 s"
    report(
        capsys,
        f"{connection.vendor}: lease holder SIGKILLed ({kind})",
        takeover_s=round(takeover, 2),
        **figures,
    )
    # A lock is free the moment its holder dies, and the stand-by's waiting
    # thread wakes it; a row lapses after its ttl, then a stand-by's look.
    assert takeover < (2 if connection.vendor == "sqlite" else 15)
    assert figures["not_expired"] == 0
    assert figures["expired_twice"] == 0
    assert figures["expired_early"] == 0
