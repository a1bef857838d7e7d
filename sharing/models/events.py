"""A share's history: one ShareEvent for every change of it.

Each event is written inside the transaction of the change it records, and
only once the conditional UPDATE's row count (or RETURNING) has said the
change happened, so history and state cannot disagree: a rollback takes both
away, a refused change leaves neither.
"""

import ipaddress
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import models, router
from django.utils.translation import pgettext_lazy

from sharing import rows
from sharing.signals import share_events_saved

# Longer User-Agent headers are cut: they only ever identify a client.
USER_AGENT_MAX = 255
# EVENT_CLIENT_ADDRESS: how much of a visitor's address an event keeps.
ADDRESS_MODES = ("truncated", "full", "none")
# Bits kept by "truncated": an IPv4 /24 (last octet zeroed), an IPv6 /48
# (the site's prefix, not the subscriber's /64 nor the interface).
KEEP_BITS = {4: 24, 6: 48}


# What an owner reads of an event, in order (API and admin); lateness_ms is
# the lateness in milliseconds.
SHOWN_FIELDS = (
    "kind",
    "at",
    "old_expires_at",
    "expires_at",
    "lateness_ms",
    "bytes",
    "client_address",
    "user_agent",
    "details",
)


@dataclass(frozen=True)
class Visitor:
    """Who acted on a public link: the address as links.guards sees it
    (proxies resolved, not yet truncated) and the User-Agent header."""

    address: str = ""
    user_agent: str = ""


def stored_address(address: str) -> str | None:
    """`address` as EVENT_CLIENT_ADDRESS says events keep it; None when it
    is not an IP address (e.g. a unix socket) or the setting is "none"."""
    return _stored_address(address, getattr(settings, "EVENT_CLIENT_ADDRESS", "truncated"))


@lru_cache(maxsize=4096)
def _stored_address(address: str, mode: str) -> str | None:
    # Cached: parsing the address cost ~3 % of a download's CPU, and a
    # busy link sees the same few clients again and again.
    if mode not in ADDRESS_MODES:
        raise ImproperlyConfigured(f"EVENT_CLIENT_ADDRESS must be one of {', '.join(ADDRESS_MODES)}, got {mode!r}")
    if mode == "none":
        return None
    try:
        parsed = ipaddress.ip_address(address.strip())
    except ValueError:
        return None
    if parsed.version == 6 and parsed.ipv4_mapped is not None:  # ::ffff:192.0.2.1 is that IPv4 client
        parsed = parsed.ipv4_mapped
    if mode == "full":
        return str(parsed)
    network = ipaddress.ip_network(f"{parsed}/{KEEP_BITS[parsed.version]}", strict=False)
    return str(network.network_address)


def visitor_fields(visitor: "Visitor | None") -> dict:
    if visitor is None:
        return {}
    return {"client_address": stored_address(visitor.address), "user_agent": visitor.user_agent[:USER_AGENT_MAX]}


class ShareEvent(models.Model):
    class Kind(models.TextChoices):
        # Labels for people (the share page's history, the admin), in the
        # reader's language; the values are the API's and never change.
        CREATED = "created", pgettext_lazy("share event", "Created")
        # The deadline moved (later or earlier).
        RENEWED = "renewed", pgettext_lazy("share event", "Renewed")
        # Download limit, password or message.
        CHANGED = "changed", pgettext_lazy("share event", "Changed")
        # A response from byte 0: one copy started.
        DOWNLOADED = "downloaded", pgettext_lazy("share event", "Downloaded")
        # A response from a later byte: a download continued.
        RESUMED = "resumed", pgettext_lazy("share event", "Resumed")
        # A file shown in the browser (its bytes sent; no download counted).
        PREVIEWED = "previewed", pgettext_lazy("share event", "Previewed")
        WRONG_PASSWORD = "wrong_password", pgettext_lazy("share event", "wrong password")
        UNSHARED = "unshared", pgettext_lazy("share event", "Unshared")
        EXPIRED = "expired", pgettext_lazy("share event", "Expired")
        DOWNLOAD_LIMIT_REACHED = "download_limit_reached", pgettext_lazy("share event", "download limit reached")
        FILE_DELETED = "file_deleted", pgettext_lazy("share event", "file deleted")
        # A file of the share was found infected: the share ended (scanning/).
        INFECTED = "infected", pgettext_lazy("share event", "malware found")
        # sharing.models.reactivation.
        REACTIVATED = "reactivated", pgettext_lazy("share event", "Reactivated")
        # A downloaded or resumed response closed: how far its client got
        # (sharing.models.receipts).
        DELIVERED = "delivered", pgettext_lazy("share event", "Delivered")

    # No single-column index: shareevent_share_at_idx starts with share.
    share = models.ForeignKey("sharing.Share", on_delete=models.CASCADE, related_name="events", db_index=False)
    kind = models.CharField(max_length=24, choices=Kind.choices)
    at = models.DateTimeField(help_text="The time that decided the change (read under the lock).")
    old_expires_at = models.DateTimeField(null=True, blank=True, help_text="renewed: the deadline before.")
    expires_at = models.DateTimeField(
        null=True, blank=True, help_text="created, renewed: the deadline after; expired: the deadline that passed."
    )
    lateness = models.DurationField(
        null=True, blank=True, help_text="expired: how long after its deadline the expiry was committed."
    )
    bytes = models.PositiveBigIntegerField(
        null=True,
        blank=True,
        help_text="downloaded, resumed, previewed: the bytes of the response's range; delivered: the bytes of it "
        "the client got.",
    )
    client_address = models.GenericIPAddressField(
        null=True, blank=True, help_text="As EVENT_CLIENT_ADDRESS keeps it (by default the last IPv4 octet zeroed)."
    )
    user_agent = models.CharField(max_length=USER_AGENT_MAX, blank=True, default="")
    # What else a kind says, e.g. changed: {"max_downloads": [old, new], "password": "set"}.
    details = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["at", "id"]
        indexes = [
            models.Index(fields=["share", "at", "id"], name="shareevent_share_at_idx"),
            # The owner pages count each link's receipts (sharing.models.receipts):
            # only those rows, not a busy link's whole history.
            models.Index(fields=["share"], condition=models.Q(kind="delivered"), name="shareevent_delivered_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} of share {self.share_id} at {self.at:%Y-%m-%d %H:%M:%S}"

    @classmethod
    def record(
        cls, share_id: int, kind: str, at: datetime, *, visitor: Visitor | None = None, **fields
    ) -> "ShareEvent":
        """Write one event; call inside the transaction of the change."""
        event = cls(share_id=share_id, kind=kind, at=at, **visitor_fields(visitor), **fields)
        rows.insert_skipping_save(event, using=router.db_for_write(cls))
        share_events_saved.send(sender=cls, events=[event], using=event._state.db)
        return event

    @classmethod
    def save_all(cls, events: list["ShareEvent"]) -> None:
        """Write `events` in one INSERT; call inside the transaction of the change."""
        if events:
            cls.objects.bulk_create(events)
            share_events_saved.send(sender=cls, events=events, using=events[0]._state.db)


def change_events(share_id: int, at: datetime, before: dict, after: dict, *, ended: bool = False) -> list[ShareEvent]:
    """The events of a change (Share.change) that its UPDATE made: `before`
    is the row as read under the lock, `after` the UPDATE's SET values (a
    field is in it only when the caller asked to change it), `ended` whether
    the new download limit ended the share."""
    events = []
    if "expires_at" in after and after["expires_at"] != before["expires_at"]:
        events.append(
            ShareEvent(
                share_id=share_id,
                kind=ShareEvent.Kind.RENEWED,
                at=at,
                old_expires_at=before["expires_at"],
                expires_at=after["expires_at"],
            )
        )
    details = {}
    if "max_downloads" in after and after["max_downloads"] != before["max_downloads"]:
        details["max_downloads"] = [before["max_downloads"], after["max_downloads"]]
    # Whether, not what: the history (and the webhooks it feeds) carries
    # neither a password's hash nor the note itself.
    for field, name in (("password_hash", "password"), ("message", "message")):
        if field in after and after[field] != before[field]:
            had, has = bool(before[field]), bool(after[field])
            details[name] = ("changed" if had else "set") if has else "removed"
    if details:
        events.append(ShareEvent(share_id=share_id, kind=ShareEvent.Kind.CHANGED, at=at, details=details))
    if ended:
        events.append(ShareEvent(share_id=share_id, kind=ShareEvent.Kind.DOWNLOAD_LIMIT_REACHED, at=at))
    return events


def record_download(cursor, connection, share_id: int, at: datetime, **fields) -> "ShareEvent":
    """Record a response its statement allowed (insert_download_event's
    `fields`: its visitor, the bytes of its range, its kind and details) with
    `cursor` inside that statement's transaction; then share_events_saved as
    for any events."""
    event = insert_download_event(cursor, connection, share_id, at, **fields)
    share_events_saved.send(sender=ShareEvent, events=[event], using=connection.alias)
    return event


def insert_download_event(
    cursor,
    connection,
    share_id: int,
    at: datetime,
    *,
    visitor: Visitor | None,
    size: int | None,
    kind: str = ShareEvent.Kind.DOWNLOADED,
    details: str = "{}",
) -> ShareEvent:
    """The event of a response its statement allowed (`kind`: downloaded,
    resumed or previewed), with the bytes of its range and `details`, JSON
    saying which file or the zip; the caller sends share_events_saved for it
    (a batch of downloads sends one signal for all of its events). Written
    out: bulk_create's building of it cost more CPU than the download's
    UPDATE."""
    table = connection.ops.quote_name(ShareEvent._meta.db_table)
    at_value = connection.ops.adapt_datetimefield_value(at)
    cursor.execute(
        f"INSERT INTO {table} ({DOWNLOAD_EVENT_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING id",
        [
            share_id,
            at_value,
            *download_event_values(connection, visitor=visitor, size=size, kind=kind, details=details),
        ],
    )
    return ShareEvent(pk=cursor.fetchone()[0], share_id=share_id, kind=kind, at=at)


# A download event's columns: share_id and at, then download_event_values's.
DOWNLOAD_EVENT_COLUMNS = "share_id, at, kind, bytes, client_address, user_agent, details"


def download_event_values(connection, *, visitor: Visitor | None, size: int | None, kind: str, details: str) -> list:
    shown = visitor_fields(visitor)
    return [
        kind,
        size,
        connection.ops.adapt_ipaddressfield_value(shown.get("client_address")),
        shown.get("user_agent", ""),
        details,
    ]
