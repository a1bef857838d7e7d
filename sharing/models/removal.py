"""Removing what has ended: a deleted file's shares, ephemeral files, and
ended shares past the policy's retention.

Ephemeral files (uploaded with delete_when_unshared) are gone, bytes and
row, as soon as they have been shared and no share of them is live any
more; a file not shared yet is kept. Whoever ends a share asks for its file
to be reaped through a signal (sharing.signals): share_ended for an unshare
or a download limit (reaped on commit), shares_expired for the one expiry
path (reaped at once, or batched by the expiry daemon's housekeeper, which
defers them here with defer_expiry_reaps); the daemon's periodic sweep
catches what a crash between a commit and its reap left behind.

Reaping is idempotent and race-safe: the file's row is locked, then its
shares, and only then is "no live share" decided, at the time read under
those locks (locked_now). A share created or reactivated meanwhile either
committed first (and is seen live: the file stays) or waits for the deletion
(and then finds the file gone). A second reaper finds no row.

Retention: the expiry daemon purges in bounded batches (expiry.housekeeping),
so a backlog (the first run after an upgrade, a policy shortened from a year
to a day) never becomes one long transaction holding the write lock.
"""

import logging
from collections.abc import Callable, Iterable
from functools import partial

from django.db import connections, transaction
from django.db.models import Exists, F, OuterRef, Subquery
from django.dispatch import receiver
from django.utils import timezone

from sharing.models.events import ShareEvent
from sharing.models.expiring import expire_shares
from sharing.models.files import StoredFile
from sharing.models.items import ShareItem
from sharing.models.policy import SharingPolicy
from sharing.models.shares import Share
from sharing.models.state import due_q, locked_now, sendable_q, servable_q
from sharing.signals import share_ended, shares_expired

logger = logging.getLogger("sharing")


def delete_file(stored: StoredFile) -> int:
    """Take the file out of its shares, delete the row, then the bytes.

    A share whose only file it is ends: one already past its deadline
    expired before the file went, so it is expired (the one expiry path);
    an active one becomes unshared (file_deleted). A share that holds other
    files goes on with them, one copy smaller. Return how many were
    unshared. The bytes go only once the transaction has committed, so a
    rollback never leaves a row without its file.
    """
    with transaction.atomic():
        # The file's row first: a share of it created meanwhile waits for
        # this commit (and then fails), so the rows read below are exactly
        # the ones the UPDATEs change and the events record.
        list(StoredFile.objects.filter(pk=stored.pk).select_for_update().values_list("pk", flat=True))
        holders = Share.objects.holding(stored.pk)
        now = locked_now(holders)
        keeps_others = Exists(ShareItem.objects.filter(share_id=OuterRef("pk")).exclude(file_id=stored.pk))
        active = holders.exclude(keeps_others).filter(status=Share.Status.ACTIVE)
        expire_shares(list(active.filter(due_q(now)).values_list("pk", flat=True)), now)
        ending = list(active.order_by("pk").values_list("pk", flat=True))
        unshared = active.update(
            status=Share.Status.UNSHARED, end_reason=Share.EndReason.FILE_DELETED, ended_at=now, updated_at=now
        )
        ShareEvent.save_all([ShareEvent(share_id=pk, kind=ShareEvent.Kind.FILE_DELETED, at=now) for pk in ending])
        others = StoredFile.objects.filter(share_items__share_id=OuterRef("pk")).exclude(pk=stored.pk)
        holders.filter(keeps_others).update(
            size=F("size") - stored.size, least=Subquery(others.order_by("size").values("size")[:1])
        )
        stored.delete()  # its items cascade; the bytes follow on commit (sharing.models.leftovers)
    return unshared


def end_infected_shares(stored: StoredFile) -> list[int]:
    """Inside the transaction that recorded `stored` as infected: end every
    share of it that could still send it (its other files with it), as
    `infected`, with their events; return their ids. One already past its
    deadline expired first (the one expiry path), as in delete_file."""
    list(StoredFile.objects.filter(pk=stored.pk).select_for_update().values_list("pk", flat=True))
    holders = Share.objects.holding(stored.pk)
    now = locked_now(holders)
    active = holders.filter(status=Share.Status.ACTIVE)
    expire_shares(list(active.filter(due_q(now)).values_list("pk", flat=True)), now)
    ending = list(active.order_by("pk").values_list("pk", flat=True))
    active.filter(pk__in=ending).update(
        status=Share.Status.UNSHARED, end_reason=Share.EndReason.INFECTED, ended_at=now, updated_at=now
    )
    ShareEvent.save_all([ShareEvent(share_id=pk, kind=ShareEvent.Kind.INFECTED, at=now) for pk in ending])
    if ending:
        share_ended.send(sender=Share, file_ids=[stored.pk])
    return ending


def end_owner_shares(owner_id: int) -> list[int]:
    """End every share of owner `owner_id` that could still send bytes, as
    `unshared`, in one UPDATE with their events; return their ids. For an
    owner whose account was disabled while the deployment ends such a
    user's links (signin.sessions). One already past its deadline expired
    first (the one expiry path), as in delete_file."""
    with transaction.atomic():
        owned = Share.objects.filter(owner_id=owner_id)
        now = locked_now(owned.filter(status__in=[Share.Status.ACTIVE, Share.Status.EXPIRED]))
        expire_shares(list(owned.filter(due_q(now)).values_list("pk", flat=True)), now)
        ending = list(owned.filter(sendable_q(now)).order_by("pk").values_list("pk", flat=True))
        owned.filter(sendable_q(now), pk__in=ending).update(
            status=Share.Status.UNSHARED, end_reason=Share.EndReason.UNSHARED, ended_at=now, updated_at=now
        )
        ShareEvent.save_all([ShareEvent(share_id=pk, kind=ShareEvent.Kind.UNSHARED, at=now) for pk in ending])
        if ending:
            file_ids = ShareItem.objects.filter(share_id__in=ending).values_list("file_id", flat=True).distinct()
            share_ended.send(sender=Share, file_ids=list(file_ids))
    return ending


# --- ephemeral files --------------------------------------------------------------


def reap_files(file_ids: Iterable[int], using: str = "default", *, were_shared: bool = False) -> int:
    """Delete those of `file_ids` that are ephemeral, have been shared and
    have no live share now; return how many this call deleted.

    `were_shared`: the caller knows they were (the purge, which has just
    deleted shares of them: none may be left to say so)."""
    ephemeral = StoredFile.objects.using(using).filter(pk__in=list(file_ids), delete_when_unshared=True)
    candidates = list(ephemeral.values_list("pk", flat=True))
    return sum(_reap_one(pk, using, were_shared) for pk in candidates)


def _reap_one(pk: int, using: str, were_shared: bool) -> bool:
    with transaction.atomic(using=using):
        files = StoredFile.objects.using(using).filter(pk=pk, delete_when_unshared=True)
        if connections[using].features.has_select_for_update:
            files = files.select_for_update()
        stored = files.first()
        if stored is None:  # another reaper (or a plain delete) got there first
            return False
        shares = Share.objects.using(using).holding(pk)
        now = locked_now(shares)
        if not (were_shared or shares.exists()) or shares.servable(now).exists():
            return False
        delete_file(stored)
    return True


def reap_after_shares(share_ids: list[int], using: str = "default") -> int:
    """Reap the ephemeral files of `share_ids` (shares that just ended)."""
    file_ids = (
        ShareItem.objects.using(using)
        .filter(share_id__in=share_ids, file__delete_when_unshared=True)
        .order_by()
        .values_list("file_id", flat=True)
        .distinct()
    )
    return reap_files(list(file_ids), using)


def sweep(limit: int, using: str = "default") -> int:
    """Reap up to `limit` ephemeral files left with no live share (the safety
    net: one query over the partial index file_ephemeral_idx when idle)."""
    held = ShareItem.objects.using(using).filter(file_id=OuterRef("pk"))
    live_share = Share.objects.using(using).filter(servable_q(timezone.now()), pk=OuterRef("share_id"))
    due = (
        StoredFile.objects.using(using)
        .filter(delete_when_unshared=True)
        .filter(Exists(held))
        .exclude(Exists(held.filter(Exists(live_share))))
        .order_by()
        .values_list("pk", flat=True)[:limit]
    )
    return reap_files(list(due), using)


def _reap_quietly(file_ids: list[int], using: str = "default", *, share_ids: list[int] | None = None) -> None:
    """Reap and never raise into the caller: the shares have ended either
    way, and the daemon's sweep retries a failed reap."""
    try:
        if share_ids is not None:
            reap_after_shares(share_ids, using)
        else:
            reap_files(file_ids, using)
    except Exception:
        logger.warning(
            "could not delete the ephemeral files of %s; the expiry daemon will retry",
            f"shares {share_ids}" if share_ids is not None else f"files {file_ids}",
            exc_info=True,
        )


@receiver(share_ended, dispatch_uid="sharing.removal.reap_after_end")
def reap_after_end(sender, file_ids: list[int], **kwargs) -> None:
    """Sent inside the transaction that ended a share: reap once it has committed."""
    if file_ids:
        transaction.on_commit(partial(_reap_quietly, list(file_ids)))


# The expiry daemon's housekeeper, when one runs in this process: it batches
# the reaps of many expiry statements (at 10,000 expiries a second a query
# after every statement cost more CPU than the expiries).
_expiry_reaps_deferred_to: list[Callable[[list[int]], None]] = []


def defer_expiry_reaps(collect: Callable[[list[int]], None]) -> Callable[[], None]:
    """Hand the ids of expired shares to `collect` instead of reaping them at
    once; return the function that stops it."""
    _expiry_reaps_deferred_to.append(collect)
    return partial(_expiry_reaps_deferred_to.remove, collect)


@receiver(shares_expired, dispatch_uid="sharing.removal.reap_after_expiry")
def reap_after_expiry(sender, share_ids: list[int], using: str = "default", **kwargs) -> None:
    """Sent after an expiry statement committed."""
    if _expiry_reaps_deferred_to:
        _expiry_reaps_deferred_to[-1](share_ids)
    else:
        _reap_quietly([], using, share_ids=share_ids)


# --- retention --------------------------------------------------------------------


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
        rows = list(batch.values_list("pk", flat=True)[:limit])
        if not rows:
            return 0
        files = set(ShareItem.objects.using(using).filter(share_id__in=rows).values_list("file_id", flat=True))
        # The ORM's delete, so whatever refers to a share (events, downloads,
        # items, rows of other apps) goes with it as its on_delete says.
        due.filter(pk__in=rows).delete()
    if files:
        reap_files(files, using, were_shared=True)
    return len(rows)
