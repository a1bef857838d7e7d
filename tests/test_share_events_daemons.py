"""Real runexpiry processes write exactly one expired event per expiry, in
the transaction of the expiry: SQLite with one daemon, PostgreSQL with
several racing over the same shares (SKIP LOCKED)."""

from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from sharing.models import Share, ShareEvent
from tests.helpers import bulk_shares, create_share, report, start_manage, stop, wait_for_text, wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def all_expired(ids: list[int]) -> bool:
    return not Share.objects.filter(pk__in=ids, status=Share.Status.ACTIVE).exists()


def assert_one_expired_event_each(ids: list[int]) -> None:
    events = ShareEvent.objects.filter(share_id__in=ids, kind=ShareEvent.Kind.EXPIRED)
    counts = Counter(events.values_list("share_id", flat=True))
    assert sorted(counts) == sorted(ids), "a share expired without its event"
    assert set(counts.values()) == {1}, {i: n for i, n in counts.items() if n > 1}
    shares = Share.objects.in_bulk(ids)
    for event in events:
        share = shares[event.share_id]
        assert share.status == Share.Status.EXPIRED
        assert event.at == share.ended_at
        assert event.expires_at == share.expires_at
        assert event.lateness == share.ended_at - share.expires_at
        assert event.lateness >= timedelta(0)


def test_sqlite_the_daemon_records_each_expiry_once(shared_file, tmp_path):
    if connection.vendor != "sqlite":
        pytest.skip("the PostgreSQL version races several daemons")
    output = tmp_path / "daemon.out"
    daemon = start_manage("runexpiry", "--pickup-interval", "0.05", output=output)
    try:
        wait_for_text(output, "refresh:", 20, process=daemon)
        shares = [create_share(shared_file, 1 + i * 0.02) for i in range(30)]
        renewed, unshared = shares[:2]
        renewed.set_expiry(timezone.now() + timedelta(hours=1))
        unshared.unshare()
        due = [share.pk for share in shares[2:]]
        assert wait_until(lambda: all_expired(due), 20)
    finally:
        stop(daemon)
    assert daemon.returncode == 0, output.read_text()
    assert_one_expired_event_each(due)
    assert not ShareEvent.objects.filter(share__in=[renewed, unshared], kind=ShareEvent.Kind.EXPIRED).exists()


@pytest.mark.postgres
@pytest.mark.fault
@pytest.mark.timeout(120)
def test_postgresql_three_daemons_record_each_expiry_exactly_once(shared_file, tmp_path, capsys):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL")
    # Deadlines close together: the daemons' batches overlap and race.
    ids = bulk_shares(shared_file, [i * 0.004 for i in range(400)], start_in=4)
    outputs = [tmp_path / f"daemon{n}.out" for n in range(3)]
    logs = [tmp_path / f"daemon{n}.ids" for n in range(3)]
    daemons = [
        start_manage("runexpiry", "--pickup-interval", "0.05", "--log-expired-ids", str(log), output=path)
        for path, log in zip(outputs, logs, strict=True)
    ]
    try:
        for daemon, path in zip(daemons, outputs, strict=True):
            wait_for_text(path, "refresh:", 30, process=daemon)
        late = [create_share(shared_file, 0.5 + i * 0.01) for i in range(100)]  # picked up while running
        ids += [share.pk for share in late]
        assert wait_until(lambda: all_expired(ids), 40, 0.05)
    finally:
        for daemon in daemons:
            stop(daemon)
    assert [daemon.returncode for daemon in daemons] == [0, 0, 0], [path.read_text() for path in outputs]
    assert_one_expired_event_each(ids)
    # The ids each daemon's UPDATE returned (logged after commit) are the events' ids.
    logged = [[int(line.split()[0]) for line in log.read_text().splitlines()] if log.exists() else [] for log in logs]
    assert sorted(i for ids_of_one in logged for i in ids_of_one) == sorted(ids)
    report(capsys, "3 daemons, expired events", shares=len(ids), per_daemon=[len(one) for one in logged])
    assert sum(1 for ids_of_one in logged if ids_of_one) >= 2, "the daemons did not race: one expired everything"
