"""Ephemeral files: uploaded with delete_when_unshared, gone (bytes and row)
as soon as they have been shared and no share of them is live any more.

A file qualifies once it has at least one share and none that is active
and before its deadline; a file not shared yet is kept. Whoever sees a share
of such a file end asks for it to be reaped: the request that unshared it or
used its last download (on commit), the expiry daemon after each expiry
batch and the retention purge; the daemon's periodic sweep catches what a
crash between a commit and its reap left behind.

Reaping is idempotent and race-safe: the file's row is locked, then its
shares, and only then is "no live share" decided, at the time read under
those locks (sharing.models.shares.locked_now). A share created or
reactivated meanwhile either committed first (and is seen live: the file
stays) or waits for the deletion (and then finds the file gone). A second
reaper finds no row.
"""

import logging
from collections.abc import Iterable
from functools import partial

from django.db import connections, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from sharing.models.files import StoredFile
from sharing.models.shares import Share, locked_now

logger = logging.getLogger("sharing")


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
        shares = Share.objects.using(using).filter(file_id=pk)
        now = locked_now(shares)
        if not (were_shared or shares.exists()) or shares.servable(now).exists():
            return False
        stored.delete_with_shares()
    return True


def reap_later(file_id: int | None) -> None:
    """Call inside the transaction that ended a share of `file_id`: reap the
    file once that has committed. Never raises into the caller: the share
    has ended either way, and the daemon's sweep retries a failed reap."""
    if file_id is not None:
        transaction.on_commit(partial(_reap_quietly, [file_id]))


def _reap_quietly(file_ids: list[int]) -> None:
    try:
        reap_files(file_ids)
    except Exception:
        logger.warning("could not delete ephemeral file(s) %s; the expiry daemon will retry", file_ids, exc_info=True)


def reap_after_shares(share_ids: list[int], using: str = "default") -> int:
    """Reap the ephemeral files of `share_ids` (shares that just ended)."""
    file_ids = (
        Share.objects.using(using)
        .filter(pk__in=share_ids, file__delete_when_unshared=True)
        .order_by()
        .values_list("file_id", flat=True)
        .distinct()
    )
    return reap_files(list(file_ids), using)


def sweep(limit: int, using: str = "default") -> int:
    """Reap up to `limit` ephemeral files left with no live share (the safety
    net: one query over the partial index file_ephemeral_idx when idle)."""
    shares = Share.objects.using(using).filter(file_id=OuterRef("pk"))
    live = shares.filter(status=Share.Status.ACTIVE, expires_at__gt=timezone.now())
    due = (
        StoredFile.objects.using(using)
        .filter(delete_when_unshared=True)
        .filter(Exists(shares))
        .exclude(Exists(live))
        .order_by()
        .values_list("pk", flat=True)[:limit]
    )
    return reap_files(list(due), using)
