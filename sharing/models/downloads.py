"""Downloads: what a response may send, counting copies, and the history.

Every response that sends a share's bytes is decided here, with its own
rules: the deciding time is read once the lock is held, and the response is
recorded (its event) in the same transaction. Two paths:
- a link with a download limit (or a first-download notice still owed) goes
  the exact way: one conditional UPDATE of the share's row reserves the
  response's bytes from its byte budget (sharing.models.budget) and counts a
  copy when the response starts at byte 0; the response settles at close
  (Reservation.settle), giving back what it did not send and ending the share
  when its budget holds no whole copy and no other response is sending;
- a link without a limit only has to be live: a response from byte 0 inserts
  a *pending* Download row and never updates the share, so downloads of a
  hot link run side by side, in batches (sharing.models.quick_downloads),
  and nothing is reserved or settled. Folding
  moves pending rows into download_count: the daemon does it in the
  background, and whatever needs the stored count to be exact (setting a
  limit, reactivating, a first-download notice) folds the share first, under
  its lock. The exact count is always download_count plus the pending rows
  (Share.total_downloads; ShareQuerySet.with_pending_downloads).

A copy is counted (download_count, the `downloaded` event, the first-download
notice) when a response starts at byte 0; a response that starts later is a
resume (`resumed` event) and counts only its bytes. No cookie or ticket is
needed to resume: the budget, not the client, says how much may still go.

Lock order is always the share first, then its download rows, so a fold
never deadlocks with downloads or with another fold. The statements are
written out rather than built by the ORM: building them cost more CPU than
running them, on the path every public download takes.

This layer sits below Share: Share.reserve_bytes and count_download hand
their work to a DownloadCounter given the share, which asks
sharing.models.state for the rule and reaches the share's table through
the share's own model.
"""

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from django.db import DatabaseError, connections, models, transaction
from django.db.models import Count, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce

from sharing.models.budget import charge, copy_bytes
from sharing.models.events import ShareEvent, Visitor, record_download
from sharing.models.items import file_ids_of
from sharing.models.quick_downloads import Download, Outcome, QuickDownload, send_quickly
from sharing.models.receipts import Receipt, record_batched
from sharing.models.scans import scans_allow_sql
from sharing.models.state import EndReason, Status, locked_now, sendable_sql, servable_sql
from sharing.signals import share_downloaded, share_ended

__all__ = ["Download", "DownloadCounter", "Reservation", "Sending", "any_pending", "fold_locked", "pending_downloads"]

# _send_unlimited's answer when the share turns out to need the exact path.
_NOT_UNLIMITED = object()

logger = logging.getLogger(__name__)


def plain_bytes(first: int, end: int) -> int:
    """What a file's bytes [first, end) count against a byte budget: all of them."""
    return end - first


@dataclass(frozen=True)
class Sending:
    """What a response sends: one file of the share (`file_id`) or its zip
    (`file_id` None), and how many of the bytes between two offsets of the
    response count against the budget (a zip's headers count nothing: a copy
    of the share is each file's bytes once, however they are sent).
    `preview`: shown in the browser rather than saved. `size`: the length
    of the file or zip, for the response's receipt (sharing.models.receipts);
    None: no receipt."""

    file_id: int | None = None
    counted: Callable[[int, int], int] = plain_bytes
    preview: bool = False
    size: int | None = None

    def details(self) -> str:
        """The download event's details, as JSON: which file (and whether
        as a preview), or the zip."""
        if self.file_id is None:
            return '{"zip": true}'
        preview = ', "preview": true' if self.preview else ""
        return f'{{"file": {int(self.file_id)}{preview}}}'

    def starts_copy(self, first: int) -> bool:
        """Whether a response from byte `first` counts a download: from byte
        0, and not a preview (looking is not downloading)."""
        return first == 0 and not self.preview

    def event_kind(self, first: int) -> str:
        if self.preview:
            return ShareEvent.Kind.PREVIEWED
        return ShareEvent.Kind.DOWNLOADED if first == 0 else ShareEvent.Kind.RESUMED

    def record(self, cursor, connection, share_id: int, at, *, visitor: Visitor | None, first: int, end: int) -> int:
        """Record the response that sends bytes [first, end) in the share's history; return its event's id."""
        kind, details = self.event_kind(first), self.details()
        event = record_download(
            cursor, connection, share_id, at, visitor=visitor, size=end - first, kind=kind, details=details
        )
        return event.pk

    def receipt_size(self) -> int | None:
        """The size a receipt measures against; None when none is written (a preview)."""
        return None if self.preview else self.size


@dataclass(frozen=True)
class Reservation:
    """A response allowed to send bytes [first, end) of share `share_id`.

    `budgeted`: the bytes came out of the share's byte budget, so the
    response must settle when it closes. `least` is the share's smallest
    file: the budget holding less, the share is used up. `event_id` and
    `size`: the response's event and the length of its file or zip, for
    its receipt (None: no receipt)."""

    share_id: int
    first: int
    end: int
    least: int
    budgeted: bool
    share_model: type
    counted: Callable[[int, int], int] = plain_bytes
    event_id: int | None = None
    size: int | None = None
    # The first download of a link that asked to be told: share_downloaded
    # once this response closed, so the notice can say how far it got.
    announces: bool = False

    def settle(self, sent_until: int, *, measured: bool = True) -> None:
        """The response stopped at `sent_until`: give back what it never
        sent and, when no other response is sending and the budget holds no
        whole copy, end the share by its download limit; record how far its
        client got (`measured` False: sent elsewhere, nothing to tell). A
        failure leaves the bytes reserved (the safe direction) and is logged."""
        until = min(max(sent_until, self.first), self.end)
        receipt = None
        if measured and self.event_id is not None and self.size is not None:
            receipt = Receipt(self.event_id, self.first, until, self.size)
        if not self.budgeted:
            if receipt is not None:
                record_batched(self.share_id, receipt, using=self.share_model.objects.db)
        else:
            unsent = max(0, self.counted(until, self.end))
            reserved = charge(self.counted(self.first, self.end))
            try:
                settle_locked(self.share_model, self.share_id, reserved, unsent, copy_bytes(self.least), receipt)
            except DatabaseError:
                logger.warning("could not settle a response of share %s", self.share_id, exc_info=True)
        if self.announces:
            transaction.on_commit(partial(share_downloaded.send, sender=self.share_model, share_id=self.share_id))


def settle_locked(
    share_model, share_id: int, reserved: int, unsent: int, copy: int, receipt: Receipt | None = None
) -> bool:
    """Close one response that had `reserved` bytes: give its `unsent` ones
    back to the share's budget and release the rest of its hold; end the
    share (download_limit) when that leaves no response sending (nothing
    reserved) and less than `copy` bytes; record its `receipt`, in the same
    transaction. Return whether it ended the share.

    bytes_reserved keeps the holds of responses still sending, so a limit
    change or a reactivation meanwhile keeps them counted, and what they give
    back later lands in the budget they were taken from."""
    connection = connections[share_model.objects.db]
    table = connection.ops.quote_name(share_model._meta.db_table)
    with transaction.atomic(using=connection.alias):
        now = locked_now(share_model.objects.filter(pk=share_id))
        stamp = connection.ops.adapt_datetimefield_value(now)
        servable, rule_params = servable_sql(connection, now)
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {table} SET bytes_left = bytes_left + %s, bytes_reserved = bytes_reserved - %s "
                "WHERE id = %s AND bytes_reserved >= %s",
                [unsent, reserved, share_id, reserved],
            )
            cursor.execute(
                f"UPDATE {table} SET status = %s, end_reason = %s, ended_at = %s "
                f"WHERE id = %s AND {servable} AND bytes_reserved = 0 AND bytes_left < %s",
                [Status.EXPIRED, EndReason.DOWNLOAD_LIMIT, stamp, share_id, *rule_params, copy],
            )
            ended = cursor.rowcount == 1
        if receipt is not None:
            receipt.record(share_id, now)
        if ended:
            ShareEvent.record(share_id, ShareEvent.Kind.DOWNLOAD_LIMIT_REACHED, now)
        if ended:
            share_ended.send(sender=share_model, file_ids=file_ids_of(share_id, connection.alias))
    return ended


class DownloadCounter:
    """Decides and counts the responses of one share (Share.reserve_bytes and
    Share.count_download), from the share's columns as read and its row."""

    def __init__(self, share):
        self.share = share
        self.model = type(share)

    def reserve(
        self, *, first: int, end: int, visitor: Visitor | None = None, sending: Sending | None = None
    ) -> Reservation | None:
        """Allow a response to send bytes [first, end) of what `sending` says
        (the share's first file when None), or return None when the link may
        not send them (ended, unshared, past its deadline, or its byte budget
        does not hold the whole range).

        A response from byte 0 counts a copy. Call settle() on the
        Reservation when the response closes, however it ended."""
        share = self.share
        if sending is None:
            sending = Sending(file_id=share.file.pk if share.file is not None else None)
        if share.max_downloads is None and not self._owes_first_download_notice():
            reserved = self._send_unlimited(first=first, end=end, visitor=visitor, sending=sending)
            if reserved is not _NOT_UNLIMITED:
                return reserved
        return self._reserve_exactly(first=first, end=end, visitor=visitor, sending=sending)

    def count_copy(self, *, visitor: Visitor | None = None) -> bool:
        """Send one whole copy of a one-file share at once (reserve it and
        settle it as fully sent); return whether the link allowed it."""
        reservation = self.reserve(first=0, end=self.share.file.size, visitor=visitor)
        if reservation is None:
            return False
        reservation.settle(reservation.end, measured=False)
        return True

    def _owes_first_download_notice(self) -> bool:
        return self.share.notify_first_download and self.share.first_download_notified_at is None

    def _reserve_exactly(
        self, *, first: int, end: int, visitor: Visitor | None, sending: Sending
    ) -> Reservation | None:
        """The exact path: check and reserve in one UPDATE of the share's row.

        Check and reservation are one statement, so a response racing an
        unshare either commits first (and is sent) or sees the unshare (and
        is not), and of many racing for a limited link's last bytes only
        those the budget holds win, whatever their ranges. "Now" is read once
        the lock is ours: a response that waited for the lock past the
        deadline is refused."""
        starts_copy = sending.starts_copy(first)
        cost = charge(sending.counted(first, end))
        share_id, model = self.share.pk, self.model
        with transaction.atomic():
            now = locked_now(model.objects.filter(pk=share_id))
            connection = connections[model.objects.db]
            sendable, rule_params = sendable_sql(connection, now)
            table = connection.ops.quote_name(model._meta.db_table)
            with connection.cursor() as cursor:
                cursor.execute(
                    f"UPDATE {table} SET download_count = download_count + %s, bytes_left = bytes_left - %s, "
                    "bytes_reserved = bytes_reserved + CASE WHEN bytes_left IS NULL THEN 0 ELSE %s END "
                    f"WHERE id = %s AND {sendable} AND {scans_allow_sql(connection, f'{table}.id')} "
                    "AND (bytes_left IS NULL OR bytes_left >= %s) "
                    "RETURNING bytes_left",
                    [1 if starts_copy else 0, cost, cost, share_id, *rule_params, cost],
                )
                row = cursor.fetchone()
                if row is None:
                    return None
                event_id = sending.record(cursor, connection, share_id, now, visitor=visitor, first=first, end=end)
            # The notices app claims and sends it once this response closed
            # (Reservation.settle); the claim (not this instance's view) decides.
            announces = starts_copy and self._owes_first_download_notice()
        return Reservation(
            share_id,
            first,
            end,
            self.share.least,
            row[0] is not None,
            model,
            sending.counted,
            event_id=event_id,
            size=sending.receipt_size(),
            announces=announces,
        )

    def _send_unlimited(self, *, first: int, end: int, visitor: Visitor | None, sending: Sending):
        """The quick path (sharing.models.quick_downloads): a live link
        without a limit, decided and recorded in a batch of this process's
        downloads. Return the Reservation, None when the link may not serve,
        or _NOT_UNLIMITED when the row (read under the lock) has a limit or
        owes a first-download notice after all (go the exact way)."""
        job = QuickDownload(
            share_id=self.share.pk,
            first=first,
            end=end,
            starts_copy=sending.starts_copy(first),
            kind=sending.event_kind(first),
            details=sending.details(),
            visitor=visitor,
        )
        outcome, event_id = send_quickly(job, using=self.model.objects.db)
        if outcome is Outcome.EXACT:
            return _NOT_UNLIMITED
        if outcome is Outcome.REFUSED:
            return None
        return Reservation(
            self.share.pk,
            first,
            end,
            self.share.least,
            False,
            self.model,
            sending.counted,
            event_id=event_id,
            size=sending.receipt_size(),
        )


# --- folding pending downloads into download_count -----------------------------


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
    share = connection.ops.quote_name(Download.share.field.related_model._meta.db_table)
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


def any_pending(using: str = "default") -> bool:
    """Whether any download waits to be folded (a probe of download_pending_idx)."""
    connection = connections[using]
    table = connection.ops.quote_name(Download._meta.db_table)
    # The bare boolean column matches download_pending_idx's WHERE (a bound
    # parameter would not let SQLite use the partial index).
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT 1 FROM {table} WHERE pending LIMIT 1")
        return cursor.fetchone() is not None
