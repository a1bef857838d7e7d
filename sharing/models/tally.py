"""Downloads of unlimited links: counted as rows, folded into the share later.

A link without a download limit has nothing to decide per download but
whether it is live, so its downloads do not update the share's row: each
inserts a pending Download (sharing.models.counting), and many run at once
instead of queueing for one row lock. The exact count is always
download_count plus the share's pending rows (Share.total_downloads, and
ShareQuerySet.with_pending_downloads for lists). Folding moves pending rows
into download_count: the daemon does it in the background, and whatever
needs the stored count to be exact (setting a limit, reactivating, a
first-download notice) folds the share first, under its lock.

Lock order is always the share first, then its download rows, the same as
a download's (FOR SHARE on the share, then its INSERT), so a fold never
deadlocks with downloads or with another fold.
"""

from django.db import connections, models, transaction
from django.db.models import Count, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce

from sharing.models.clock import locked_now
from sharing.models.downloads import Download

# Shares folded per transaction by the background fold: bounded work under
# locks that downloads of those shares wait for.
FOLD_BATCH = 500


def pending_downloads():
    """An expression for annotate(): a share's pending (not yet folded) downloads."""
    counted = (
        Download.objects.filter(share_id=OuterRef("pk"), pending=True)
        .order_by()
        .values("share_id")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(counted, output_field=models.BigIntegerField()), Value(0))


def fold_locked(share_ids: list[int], using: str = "default") -> None:
    """Add the pending downloads of `share_ids` to their download_count.

    The caller holds the shares' locks (locked_now) inside atomic(): no
    download of them can be counted meanwhile, so the two statements see
    the same pending rows."""
    if not share_ids:
        return
    connection = connections[using]
    share = connection.ops.quote_name("sharing_share")
    download = connection.ops.quote_name(Download._meta.db_table)
    placeholders = ", ".join(["%s"] * len(share_ids))
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {share} SET download_count = download_count + "
            f"(SELECT COUNT(*) FROM {download} d WHERE d.share_id = {share}.id AND d.pending) "
            f"WHERE id IN ({placeholders}) "
            f"AND EXISTS (SELECT 1 FROM {download} d WHERE d.share_id = {share}.id AND d.pending)",
            share_ids,
        )
        cursor.execute(
            f"UPDATE {download} SET pending = %s WHERE pending AND share_id IN ({placeholders})",
            [False, *share_ids],
        )


def fold_pending(limit: int = FOLD_BATCH, using: str = "default") -> int:
    """Fold the pending downloads of up to `limit` shares; return how many
    shares were folded (fewer than `limit`: nothing more is pending now)."""
    from sharing.models.shares import Share  # shares imports counting, which imports this module

    if not _any_pending(using):
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


def _any_pending(using: str) -> bool:
    connection = connections[using]
    table = connection.ops.quote_name(Download._meta.db_table)
    # The bare boolean column matches download_pending_idx's WHERE (a bound
    # parameter would not let SQLite use the partial index).
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT 1 FROM {table} WHERE pending LIMIT 1")
        return cursor.fetchone() is not None
