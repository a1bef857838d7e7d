"""Retention: ended shares are kept for the policy's ended_retention, then
purged with their history (events) and download records.

The expiry daemon purges in bounded batches (expiry.housekeeping), so a
backlog (the first run after an upgrade, a policy shortened from a year to a
day) never becomes one long transaction that holds the database's write lock.
"""

from django.db import connections, transaction
from django.utils import timezone

from sharing.models.policy import SharingPolicy
from sharing.models.shares import Share


def purge_ended_shares(limit: int, using: str = "default") -> int:
    """Delete up to `limit` shares that ended more than the policy's retention
    ago, oldest end first, with everything that cascades from them (events,
    downloads); return how many shares were deleted.

    The batch is chosen and deleted in one transaction with its rows locked
    (PostgreSQL: FOR UPDATE SKIP LOCKED, so several daemons purge different
    batches and a share being reactivated is left alone; SQLite: the write
    lock), and the DELETE repeats the condition. The ephemeral files of the
    purged shares are reaped afterwards: a file whose shares are all purged
    has no share left to say it was ever shared.
    """
    from sharing.models.ephemeral import reap_files  # ephemeral imports shares

    retention = SharingPolicy.current().ended_retention
    with transaction.atomic(using=using):
        # On SQLite the transaction began with BEGIN IMMEDIATE: this clock
        # reading is the writer's. On PostgreSQL the rows are locked below,
        # by a condition that this earlier reading only makes stricter.
        cutoff = timezone.now() - retention
        due = Share.objects.using(using).filter(ended_at__lt=cutoff).exclude(status=Share.Status.ACTIVE)
        batch = due.order_by("ended_at", "id")
        if connections[using].features.has_select_for_update_skip_locked:
            batch = batch.select_for_update(skip_locked=True)
        rows = list(batch.values_list("pk", "file_id")[:limit])
        if not rows:
            return 0
        # The ORM's delete, so whatever refers to a share (events, downloads,
        # rows of other apps) goes with it as its on_delete says.
        due.filter(pk__in=[pk for pk, _ in rows]).delete()
    files = {file_id for _, file_id in rows if file_id is not None}
    if files:
        reap_files(files, using, were_shared=True)
    return len(rows)
