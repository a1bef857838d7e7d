"""Reactivation: an ended share brought back, at the same URL, with a new deadline.

A share has ended when it is expired or unshared, or when it is still
marked active but its deadline has passed (the expiry daemon has not
committed the expiry yet; the API already shows it expired). Such a share is
expired first, through the one expiry path (sharing.models.expiring) at the
time that decided, so its history reads the same whether or not the daemon
got there first.

Not reactivated: a share whose file was deleted (its bytes are gone), a live
share (change it instead), and a share whose byte budget would hold no whole
copy (sharing.models.budget) unless its downloads are reset or its limit
raised. One conditional UPDATE decides, under the row's
lock, so two reactivations racing (or a reactivation racing the purge or an
ephemeral file's deletion) cannot both win.
"""

from datetime import datetime
from functools import partial

from django.db import transaction
from django.db.models import Exists, OuterRef

from sharing.models import budget
from sharing.models.downloads import fold_locked
from sharing.models.events import ShareEvent
from sharing.models.expiring import expire_shares
from sharing.models.items import ShareItem
from sharing.models.shares import KEEP, Share, announce_schedule
from sharing.models.state import is_servable, locked_now


class ReactivationRefused(Exception):
    """The share cannot be reactivated; `message` says why (the API's 409)."""

    def __init__(self, message: str, code: str):
        super().__init__(message)
        self.message = message
        self.code = code


_BEFORE = (
    "status",
    "end_reason",
    "expires_at",
    "download_count",
    "max_downloads",
    "bytes_left",
    "bytes_reserved",
    "size",
    "least",
    "has_files",
)


def reactivate(share: Share, expires_at: datetime, *, reset_downloads: bool = False, max_downloads=KEEP) -> None:
    """Make `share` active again until `expires_at`, optionally with its
    download count back at 0 and a new download limit (None: unlimited); raise ReactivationRefused (changing nothing)
    when it may not be. `expires_at` comes from SharingPolicy.resolve_expires_at,
    as for a new share."""
    with transaction.atomic():
        now = locked_now(Share.objects.filter(pk=share.pk))
        fold_locked([share.pk])  # the count below (kept, limited or reset) is then every download
        if expires_at <= now:
            raise ReactivationRefused("The new deadline passed before the share could be reactivated.", "past")
        # Read under the lock: what the UPDATE below changes it from.
        has_files = Exists(ShareItem.objects.filter(share_id=OuterRef("pk")))
        before = Share.objects.filter(pk=share.pk).annotate(has_files=has_files).values(*_BEFORE).first()
        expire_shares([share.pk], now)  # ended by its deadline, not yet by the daemon
        ended = [Share.Status.EXPIRED, Share.Status.UNSHARED]
        candidates = Share.objects.filter(has_files, pk=share.pk, status__in=ended)
        values = {
            "status": Share.Status.ACTIVE,
            "end_reason": "",
            "ended_at": None,
            "expires_at": expires_at,
            "updated_at": now,
        }
        limit = before["max_downloads"] if before is not None else None
        if max_downloads is not KEEP:
            values["max_downloads"] = limit = max_downloads
        size, least = (before["size"], before["least"]) if before is not None else (0, 0)
        if reset_downloads:
            values["download_count"] = 0
            # Responses still sending keep their holds: what they give back
            # at their close lands in this new budget.
            full = budget.byte_budget(limit, size)
            values["bytes_left"] = None if full is None else max(0, full - (before or {}).get("bytes_reserved", 0))
        elif before is not None:
            used = budget.bytes_used(
                max_downloads=before["max_downloads"],
                bytes_left=before["bytes_left"],
                download_count=before["download_count"],
                size=size,
            )
            values["bytes_left"] = left = budget.budget_left_after(limit, used, size)
            if budget.used_up(left, least):
                # It would come back used up.
                raise _refusal(before, now, max_downloads)
        if not candidates.update(**values):
            raise _refusal(before, now, max_downloads)
        details = {"reset_downloads": reset_downloads, "was": before["end_reason"] or "expired"}
        if reset_downloads:
            details["download_count"] = before["download_count"]
        if max_downloads is not KEEP and max_downloads != before["max_downloads"]:
            details["max_downloads"] = [before["max_downloads"], max_downloads]
        ShareEvent.record(
            share.pk,
            ShareEvent.Kind.REACTIVATED,
            now,
            old_expires_at=before["expires_at"],
            expires_at=expires_at,
            details=details,
        )
        transaction.on_commit(partial(announce_schedule, share.pk, expires_at))
    share.refresh_from_db()


def _refusal(before: dict | None, now: datetime, max_downloads) -> ReactivationRefused:
    if before is None:
        return ReactivationRefused("The share no longer exists.", "gone")
    if not before["has_files"]:
        return ReactivationRefused("The share's files were deleted; it cannot be shared again.", "file_deleted")
    if is_servable(before["status"], before["expires_at"], now):
        return ReactivationRefused(
            "The share is still active; change its expiry instead (PATCH) or unshare it first.", "active"
        )
    limit = before["max_downloads"] if max_downloads is KEEP else max_downloads
    return ReactivationRefused(
        f"The share's download limit would be used up ({before['download_count']} downloads started, "
        f"limit {limit}, no whole copy left in its byte budget); send reset_downloads=true to count from zero, "
        "or a higher max_downloads.",
        "used_up",
    )
