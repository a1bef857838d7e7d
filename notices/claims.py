"""Claiming an email notice: one conditional UPDATE whose row count decides.

A notice is claimed by stamping its column (reminder_sent_at,
first_download_notified_at) only where it is still NULL and the notice is
still owed, in one statement that commits on its own before any mail is
sent. However many daemons or web workers try at once, one UPDATE changes
the row and the others change nothing (PostgreSQL re-checks the WHERE after
waiting for the winner's row lock; SQLite runs one writer at a time), so a
notice is sent by one process only. Sending comes after the commit, never
inside a transaction: a slow mail server must not hold a lock.
"""

from datetime import datetime, timedelta

from django.db.models import F, Q, QuerySet

from sharing.models import Share


def lead_is_on(lead: timedelta | None) -> bool:
    return lead is not None and lead > timedelta(0)


def reminder_owed(lead: timedelta) -> Q:
    """Shares that owe their owner a reminder for their current deadline
    (while they are servable: ask Share.objects.servable(now)). One the
    owner created or changed (updated_at) less than `lead` before its
    deadline owes none: they were there after the reminder time,
    so they know (a 1-hour link gets no "expires in 24 hours" reminder, nor
    does a link just shortened to 2 hours). Claims do not touch updated_at."""
    return Q(
        remind_before_expiry=True,
        reminder_sent_at__isnull=True,
        expires_at__gt=F("updated_at") + lead,
    )


def claim_reminder(share_id: int, now: datetime, lead: timedelta | None) -> bool:
    """Claim the reminder of `share_id` if it is due at `now` and still owed:
    not sent, not opted out, the share active and not yet past its deadline
    (renewed past the reminder time: not due yet; unshared or expired: not
    owed). Return whether this call claimed it."""
    if not lead_is_on(lead):
        return False
    owed = owing_reminders(now, lead).filter(expires_at__lte=now + lead, pk=share_id)
    return owed.update(reminder_sent_at=now) == 1


def owing_reminders(now: datetime, lead: timedelta) -> QuerySet:
    """The shares that owe a reminder at `now` with `lead`, before any is
    claimed: still servable, asked for one, and not written after its time."""
    return Share.objects.servable(now).filter(reminder_owed(lead))


def reminder_times(
    now: datetime, lead: timedelta | None, *, until: datetime | None = None, share_ids: list[int] | None = None
) -> list[tuple[int, float]]:
    """(share id, reminder time as epoch seconds) of the shares still owing a
    reminder and not yet past their deadline: those whose reminder time is
    before `until`, or those of `share_ids`. Read through the active-expiry
    index (a range of expires_at)."""
    if not lead_is_on(lead):
        return []
    shares = owing_reminders(now, lead)
    if share_ids is not None:
        shares = shares.filter(pk__in=share_ids)
    if until is not None:
        shares = shares.filter(expires_at__lt=until + lead)
    rows = shares.order_by().values_list("pk", "expires_at")
    return [(share_id, (expires_at - lead).timestamp()) for share_id, expires_at in rows]


def claim_first_download(share_id: int, now: datetime) -> bool:
    """Claim the first-download notice of `share_id`: asked for, not sent,
    and the share downloaded (the counted download has committed). Return
    whether this call claimed it."""
    return (
        Share.objects.filter(
            pk=share_id, notify_first_download=True, first_download_notified_at__isnull=True, download_count__gt=0
        ).update(first_download_notified_at=now)
        == 1
    )
