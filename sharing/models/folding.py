"""The background fold: hot links' pending downloads moved into their
shares' download_count (sharing.models.downloads says why they wait), a
bounded batch of shares at a time; the expiry daemon's housekeeping runs it."""

from django.db import transaction

from sharing.models.downloads import Download, any_pending, fold_locked
from sharing.models.shares import Share
from sharing.models.state import locked_now

# Shares folded per transaction: bounded work under locks that downloads of
# those shares wait for.
FOLD_BATCH = 500


def fold_pending(limit: int = FOLD_BATCH, using: str = "default") -> int:
    """Fold the pending downloads of up to `limit` shares into their
    download_count; return how many shares were folded (fewer than `limit`:
    nothing more is pending now)."""
    if not any_pending(using):
        return 0  # the daemon's usual case: no write transaction for nothing
    with transaction.atomic(using=using):
        share_ids = list(
            Download.objects.using(using)
            .filter(pending=True)
            .order_by("share_id")
            .values_list("share_id", flat=True)
            .distinct()[:limit]
        )
        if share_ids:
            locked_now(Share.objects.using(using).filter(pk__in=share_ids))
            fold_locked(share_ids, using)
    return len(share_ids)
