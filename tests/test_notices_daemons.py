"""Real runexpiry processes send each expiry reminder exactly once: SQLite
with two daemons taking turns through the lease, PostgreSQL with two daemons
both working. A share renewed past its reminder, unshared or opted out gets
none. The daemons write their mail with Django's file backend, so it can be
counted here."""

import re
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from sharing.models import Share, SharingPolicy
from tests.helpers import create_share, report, start_manage, stop, wait_for_text, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

LEAD = 10  # seconds: the policy's reminder lead for these tests
SHARE_MENTION = re.compile(r"\(share (\d+)\)")


def reminders_in(folder) -> Counter:
    """How many reminder messages each share got, from the file backend's files."""
    counts = Counter()
    for path in folder.glob("*.log") if folder.exists() else []:
        for message in path.read_text().split("-" * 79):
            if "Subject: Your link to" in message and "expires in" in message:
                counts.update(int(i) for i in SHARE_MENTION.findall(message))
    return counts


def run_two_daemons(shared_file, tmp_path, capsys, title: str) -> None:
    policy = SharingPolicy.current()
    policy.reminder_lead = timedelta(seconds=LEAD)
    policy.save()
    mail_dir = tmp_path / "mail"
    outputs = [tmp_path / f"daemon{n}.out" for n in range(2)]
    env = {"EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend", "EMAIL_FILE_PATH": str(mail_dir)}
    daemons = [start_manage("runexpiry", "--pickup-interval", "0.05", output=path, **env) for path in outputs]
    try:
        assert wait_until(lambda: any("refresh:" in p.read_text() for p in outputs if p.exists()), 30)
        if connection.vendor == "postgresql":
            for daemon, path in zip(daemons, outputs, strict=True):
                wait_for_text(path, "refresh:", 30, process=daemon)  # both work
        # Reminder times 4 s from now, a few milliseconds apart: the daemons race.
        reminded = [create_share(shared_file, LEAD + 4 + i * 0.005) for i in range(20)]
        renewed, unshared, opted_out = (create_share(shared_file, LEAD + 4) for _ in range(3))
        opted_out.change(remind_before_expiry=False)
        renewed.set_expiry(timezone.now() + timedelta(hours=1))
        unshared.unshare()
        ids = [share.pk for share in reminded]
        assert wait_until(lambda: sum(reminders_in(mail_dir).values()) >= len(ids), 30, 0.05)
        # Past every reminder time and the renewed share's old one, then stop:
        # stopping sends anything still queued, so a duplicate would be seen.
        assert wait_until(lambda: timezone.now() > renewed.created_at + timedelta(seconds=5), 10)
    finally:
        for daemon in daemons:
            stop(daemon)
    assert [daemon.returncode for daemon in daemons] == [0, 0], [p.read_text() for p in outputs]
    counts = reminders_in(mail_dir)
    assert counts == Counter(ids), "a reminder was missed, doubled or sent for a share that owes none"
    assert Share.objects.filter(pk__in=ids, reminder_sent_at__isnull=False).count() == len(ids)
    for share in (renewed, unshared, opted_out):
        assert Share.objects.get(pk=share.pk).reminder_sent_at is None
    claimed = [p.read_text().count("reminder for share") for p in outputs]
    report(capsys, title, reminders=len(ids), claimed_per_daemon=claimed)


def test_sqlite_two_daemons_send_each_reminder_once(shared_file, tmp_path, capsys):
    if connection.vendor != "sqlite":
        pytest.skip("the PostgreSQL version runs both daemons at once")
    run_two_daemons(shared_file, tmp_path, capsys, "SQLite, 2 daemons (lease), reminders")


@pytest.mark.postgres
def test_postgresql_two_daemons_send_each_reminder_once(shared_file, tmp_path, capsys):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL")
    run_two_daemons(shared_file, tmp_path, capsys, "PostgreSQL, 2 daemons, reminders")
