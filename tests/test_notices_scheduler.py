"""Expiry reminders as the daemon's second deadline, with time pinned by
freezegun (the scheduler's clock is time.time looked up while frozen):
no threads, no sleeps. Claims run against the real database."""

import time
from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone
from freezegun import freeze_time

from expiry.reminders import ReminderSchedule
from expiry.scheduler import ExpiryScheduler
from expiry.store import ShareStore
from notices.mail import send_reminder
from sharing.models import Share, SharingPolicy, expire_shares

START = "2026-03-01 12:00:00"
HOUR = 3600


@pytest.fixture
def frozen():
    with freeze_time(START) as frozen:
        yield frozen


@pytest.fixture
def lead(db):
    """Set the policy's reminder lead (None or 0: reminders off)."""

    def set_lead(value):
        policy = SharingPolicy.current()
        policy.reminder_lead = value
        policy.save()

    return set_lead


@pytest.fixture
def share_in(shared_file):
    def make(seconds: float, **options) -> Share:
        return Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(seconds=seconds), **options)

    return make


class Sent(list):
    """The send callback: records the claimed share ids."""

    def __call__(self, share_id):
        self.append(share_id)


def make_scheduler(sent: Sent, refresh_interval: float = 3 * HOUR, **options) -> ExpiryScheduler:
    scheduler = ExpiryScheduler(
        ShareStore(),
        clock=time.time,
        refresh_interval=refresh_interval,
        reminders=ReminderSchedule(sent, **options),
    )
    scheduler.step()  # catch-up
    scheduler.step()  # refresh: loads the window and its reminders
    return scheduler


def run_until(frozen, scheduler: ExpiryScheduler, seconds: float) -> None:
    """Advance the clock `seconds`, waking when the scheduler asks, and run every due step."""
    end = time.time() + seconds
    while True:
        while scheduler.step():
            pass
        wait = scheduler.seconds_until_next()
        if time.time() + wait > end:
            frozen.tick(end - time.time())
            while scheduler.step():
                pass
            return
        frozen.tick(max(wait, 1e-6))


def test_the_reminder_is_claimed_at_its_time_once(frozen, lead, share_in):
    lead(timedelta(hours=1))
    share = share_in(2 * HOUR)
    sent = Sent()
    scheduler = make_scheduler(sent)
    assert scheduler.reminders.scheduled_time(share.pk) == share.expires_at.timestamp() - HOUR
    assert scheduler.seconds_until_next() == pytest.approx(HOUR)  # wakes for the reminder

    run_until(frozen, scheduler, HOUR - 1)
    assert sent == []
    run_until(frozen, scheduler, 1)
    assert sent == [share.pk]
    share.refresh_from_db()
    assert share.reminder_sent_at == timezone.now()
    run_until(frozen, scheduler, HOUR + 5)  # to the expiry and past it
    assert sent == [share.pk]
    assert Share.objects.get(pk=share.pk).status == Share.Status.EXPIRED


def test_the_default_lead_is_24_hours(frozen, share_in):
    assert SharingPolicy.current().reminder_lead == timedelta(hours=24)
    share = share_in(25 * HOUR)
    sent = Sent()
    scheduler = make_scheduler(sent, refresh_interval=2 * HOUR)
    run_until(frozen, scheduler, HOUR - 1)
    assert sent == []
    run_until(frozen, scheduler, 1)
    assert sent == [share.pk]


def test_a_share_renewed_past_its_reminder_is_not_reminded_then(frozen, lead, share_in):
    lead(timedelta(hours=1))
    share = share_in(2 * HOUR)
    sent = Sent()
    scheduler = make_scheduler(sent, refresh_interval=4 * HOUR)
    share.set_expiry(timezone.now() + timedelta(hours=3))  # not picked up: the claim must say no

    run_until(frozen, scheduler, HOUR)
    assert sent == []
    assert Share.objects.get(pk=share.pk).reminder_sent_at is None
    # Re-read after the refused claim: rescheduled for the new deadline.
    assert scheduler.reminders.scheduled_time(share.pk) == share.expires_at.timestamp() - HOUR
    run_until(frozen, scheduler, HOUR)
    assert sent == [share.pk]


def test_a_share_renewed_far_past_its_reminder_is_not_reminded_at_all(frozen, lead, share_in):
    lead(timedelta(hours=1))
    share = share_in(2 * HOUR)
    sent = Sent()
    scheduler = make_scheduler(sent)
    share.set_expiry(timezone.now() + timedelta(days=10))
    scheduler.pick_up()

    run_until(frozen, scheduler, 3 * HOUR)
    assert sent == []
    assert Share.objects.get(pk=share.pk).reminder_sent_at is None


@pytest.mark.parametrize("end", ["unshared", "expired", "opted_out", "short_lived", "lead_off", "already_sent"])
def test_no_reminder_is_owed(frozen, lead, share_in, end):
    lead(timedelta(hours=1))
    share = share_in(0.5 * HOUR if end == "short_lived" else 2 * HOUR)
    sent = Sent()
    scheduler = make_scheduler(sent)
    if end == "unshared":
        share.unshare()
    elif end == "expired":
        expire_shares([share.pk], share.expires_at)  # as another daemon would
    elif end == "opted_out":
        assert share.change(remind_before_expiry=False)
    elif end == "lead_off":
        lead(timedelta(0))
    elif end == "already_sent":
        Share.objects.filter(pk=share.pk).update(reminder_sent_at=timezone.now())  # by another daemon

    run_until(frozen, scheduler, 1.5 * HOUR)
    assert sent == []


@pytest.mark.parametrize("off", [None, timedelta(0)])
def test_reminders_off_schedule_nothing(frozen, lead, share_in, off):
    lead(off)
    share_in(2 * HOUR)
    scheduler = make_scheduler(Sent())
    assert len(scheduler.reminders) == 0
    assert len(scheduler) == 1  # the expiry itself is scheduled


def test_a_shorter_lead_takes_effect_at_the_next_claim(frozen, lead, share_in):
    lead(timedelta(hours=2))
    share = share_in(3 * HOUR)
    sent = Sent()
    scheduler = make_scheduler(sent, refresh_interval=4 * HOUR)
    lead(timedelta(minutes=30))

    run_until(frozen, scheduler, 1.5 * HOUR)  # the old reminder time passed
    assert sent == []
    run_until(frozen, scheduler, HOUR)
    assert sent == [share.pk]
    assert timezone.now() - timedelta(hours=2, minutes=30) <= Share.objects.get(pk=share.pk).reminder_sent_at


def test_two_daemons_holding_the_same_reminder_claim_it_once(frozen, lead, share_in):
    lead(timedelta(hours=1))
    shares = [share_in(2 * HOUR + i) for i in range(5)]
    first, second = Sent(), Sent()
    schedulers = [make_scheduler(first), make_scheduler(second)]
    frozen.tick(HOUR + 10)
    for scheduler in schedulers:
        while scheduler.step():
            pass
    assert sorted(first + second) == sorted(s.pk for s in shares)
    assert first == [s.pk for s in shares]
    assert second == []
    assert schedulers[1].reminders.stats.refused == 5


def test_a_renewal_after_the_reminder_gets_its_own_and_a_shortening_does_not(frozen, lead, share_in):
    lead(timedelta(hours=1))
    share = share_in(2 * HOUR)
    sent = Sent()
    scheduler = make_scheduler(sent, refresh_interval=5 * HOUR)
    run_until(frozen, scheduler, HOUR)
    assert sent == [share.pk]

    share.set_expiry(timezone.now() + timedelta(minutes=30))  # shortened: set inside the lead
    scheduler.pick_up()
    run_until(frozen, scheduler, 20 * 60)
    assert sent == [share.pk]
    share.set_expiry(timezone.now() + timedelta(hours=3))  # renewed past a new reminder time
    scheduler.pick_up()
    assert Share.objects.get(pk=share.pk).reminder_sent_at is None
    run_until(frozen, scheduler, 2 * HOUR)
    assert sent == [share.pk, share.pk]


def test_a_share_picked_up_after_its_reminder_time_is_not_scheduled(frozen, lead, share_in):
    """A 1-hour link with a 24-hour lead owes no reminder: no entry, no claim."""
    lead(timedelta(hours=24))
    sent = Sent()
    scheduler = make_scheduler(sent)
    share = share_in(HOUR)
    assert scheduler.pick_up() == 1  # its expiry is scheduled
    assert scheduler.reminders.scheduled_time(share.pk) is None
    run_until(frozen, scheduler, HOUR)
    assert scheduler.reminders.stats.refused == 0
    assert sent == []


def test_a_due_expiry_goes_before_a_due_reminder(frozen, lead, share_in):
    lead(timedelta(hours=1))
    reminded = share_in(2 * HOUR)
    expiring = share_in(HOUR)
    sent = Sent()
    scheduler = make_scheduler(sent)
    frozen.tick(HOUR)
    assert scheduler.step()
    assert Share.objects.get(pk=expiring.pk).status == Share.Status.EXPIRED
    assert sent == []
    assert scheduler.step()
    assert sent == [reminded.pk]


def test_losing_the_lease_forgets_the_reminders(frozen, lead, share_in):
    lead(timedelta(hours=1))
    share_in(2 * HOUR)
    scheduler = make_scheduler(Sent())
    assert len(scheduler.reminders) == 1
    scheduler.reset()
    assert len(scheduler.reminders) == 0


def test_the_reminder_mail_goes_to_the_owner(frozen, lead, share_in, alice):
    lead(timedelta(hours=24))
    share = share_in(48 * HOUR)
    scheduler = make_scheduler(send_reminder, refresh_interval=30 * HOUR)
    run_until(frozen, scheduler, 24 * HOUR)
    (message,) = mail.outbox
    assert message.to == [alice.email]
    assert message.subject == "Your link to report.txt expires in 24 hours"
    assert f"share {share.pk}" in message.body
    assert "2026-03-03 12:00 UTC" in message.body


def test_an_owner_without_an_address_is_skipped(frozen, lead, share_in, alice, caplog):
    alice.email = ""
    alice.save()
    lead(timedelta(hours=1))
    share = share_in(2 * HOUR)
    scheduler = make_scheduler(send_reminder)
    run_until(frozen, scheduler, HOUR)
    assert mail.outbox == []
    assert Share.objects.get(pk=share.pk).reminder_sent_at is not None  # claimed: not retried
    assert "has no email address" in caplog.text


@pytest.mark.django_db
def test_a_negative_lead_is_refused():
    from django.core.exceptions import ValidationError

    policy = SharingPolicy(reminder_lead=timedelta(hours=-1))
    with pytest.raises(ValidationError, match="reminder_lead"):
        policy.full_clean()
