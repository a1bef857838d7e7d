"""Delivery receipts: how much of a downloaded or resumed response its
client received, recorded when the response closes.

A `downloaded` or `resumed` event is written when its response is allowed,
before its first byte goes out; how far the client got is known only at the
close. The receipt is then a `delivered` event of its own (history is
written once and never rewritten), whose details name the response's event
and say where it started, where the client stopped, the size of what it is
a part of (the file, or the share's zip), and whether that reached the end
(`whole`). Its `bytes` are the bytes of the response the client got.

How far is what links.delivery measured: on a connection the client reset,
what the kernel put on the wire (so at most a socket buffer more than the
client kept); on a response that ran to its end, all of it. A response the
front server or a bucket sent (DOWNLOAD_OFFLOAD) and a preview get no
receipt: nothing here sees how far those went.

Being an event, a receipt reaches the API's history and the webhooks
(`delivered`) like any other; the owner's page folds it into the line of the
download it closes (web.history).
"""

import json
import logging
from dataclasses import dataclass

from django.db import DatabaseError
from django.db.models import Count

from sharing.models.events import ShareEvent
from sharing.models.quick_downloads import Outcome, QuickEvent, send_quickly

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Receipt:
    """How far the client of one response got: bytes [first, until) of a
    whole of `size` bytes; `event_id` is the response's own event."""

    event_id: int
    first: int
    until: int
    size: int

    @property
    def whole(self) -> bool:
        """Whether the client has the end of the file: with a response from
        byte 0, all of it; with a resume, the rest it lacked."""
        return self.until >= self.size

    def details(self) -> dict:
        return {
            "download": self.event_id,
            "from": self.first,
            "until": self.until,
            "size": self.size,
            "whole": self.whole,
        }

    def record(self, share_id: int, at) -> ShareEvent:
        """Write the receipt; call inside the transaction that settles the response, if any."""
        return ShareEvent.record(
            share_id, ShareEvent.Kind.DELIVERED, at, bytes=self.until - self.first, details=self.details()
        )

    def quick_event(self, share_id: int) -> QuickEvent:
        """The receipt as a job of the quick downloads' batches."""
        return QuickEvent(share_id, ShareEvent.Kind.DELIVERED, self.until - self.first, json.dumps(self.details()))


def reached_percent(details: dict) -> int:
    """How far into the file a receipt's client got, in whole percent,
    rounded down: 100 only at its end."""
    size = details.get("size") or 0
    return details["until"] * 100 // size if size else 100


def first_copy_receipt(share) -> ShareEvent | None:
    """The receipt of `share`'s first download (None while it is sending, or
    when it was sent elsewhere)."""
    first = share.events.filter(kind=ShareEvent.Kind.DOWNLOADED).order_by("at", "id").first()
    return None if first is None else of_events([first.pk]).get(first.pk)


def record_batched(share_id: int, receipt: Receipt, using: str = "default") -> None:
    """Write `receipt` where no settling transaction is open (a response of a
    link without a limit), in the next batch of this process's quick
    downloads (sharing.models.quick_downloads): a hot link's responses
    close as fast as they start, and a transaction of their own for the
    receipts would double what each download writes. A share deleted
    meanwhile, or a database out of reach, loses only the receipt, logged."""
    try:
        outcome, _ = send_quickly(receipt.quick_event(share_id), using=using)
    except DatabaseError:
        logger.warning("could not record the receipt of a response of share %s", share_id, exc_info=True)
        return
    if outcome is not Outcome.ALLOWED:
        logger.info("the receipt of a response of share %s was dropped: the share is gone", share_id)


def of_events(event_ids) -> dict[int, ShareEvent]:
    """The receipts of the download events `event_ids`, by those events' ids."""
    receipts = ShareEvent.objects.filter(kind=ShareEvent.Kind.DELIVERED, details__download__in=list(event_ids))
    return {receipt.details["download"]: receipt for receipt in receipts}


def whole_copies(share_ids) -> dict[int, int]:
    """How many times each share's file (or zip) reached its recipient to
    its end (a resume that completed it included), by share id."""
    rows = (
        ShareEvent.objects.filter(share_id__in=list(share_ids), kind=ShareEvent.Kind.DELIVERED, details__whole=True)
        .order_by()
        .values("share_id")
        .annotate(n=Count("id"))
    )
    return {row["share_id"]: row["n"] for row in rows}
