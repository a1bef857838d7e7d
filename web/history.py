"""A share's history as its owner reads it on the share page: one line per
ShareEvent, newest first, in plain words. A download's receipt (a
`delivered` event, sharing.models.receipts) is not a line of its own: it is
said on the line of the download it closes ("received in full", "stopped at
40 %")."""

from dataclasses import dataclass
from datetime import timedelta

from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from pages.units import file_size
from sharing.models import Share, ShareEvent
from sharing.models.receipts import of_events, reached_percent
from web.presenters import when

HISTORY_LINES = 20  # the admin and GET /api/shares/{id}/events/ have them all
# A change event's details name what changed in English words (the API's);
# the page says them in the reader's language.
CHANGE_WORDS = {
    ("password", "set"): gettext_lazy("password set"),
    ("password", "changed"): gettext_lazy("password changed"),
    ("password", "removed"): gettext_lazy("password removed"),
    ("message", "set"): gettext_lazy("message set"),
    ("message", "changed"): gettext_lazy("message changed"),
    ("message", "removed"): gettext_lazy("message removed"),
}


@dataclass(frozen=True)
class HistoryLine:
    at: str
    at_iso: str
    what: str
    detail: str


def _milliseconds(span: timedelta) -> str:
    return _("%(ms)s ms late") % {"ms": f"{span / timedelta(milliseconds=1):.3f}"}


def delivery_words(event: ShareEvent, receipt: ShareEvent | None) -> str:
    """How far the client of a downloaded or resumed response got; "" while
    it is sending, or when nothing here saw (sent by the front server)."""
    if receipt is None:
        return ""
    got = receipt.details
    if got.get("whole"):
        if event.kind == ShareEvent.Kind.RESUMED:
            return _("completed")
        return _("received in full")
    asked_until = got["from"] + (event.bytes or 0)
    at = reached_percent(got)
    if got["until"] >= asked_until:  # a part asked for, all of it received
        return _("received the part asked for, up to %(percent)s %%") % {"percent": at}
    return _("stopped at %(percent)s %%") % {"percent": at}


def _with_moments(words: str, **moments) -> SafeString:
    """Translated words around moments, each a <time> the page's script shows
    in the reader's zone as it does the line's own time and every other one."""
    times = {
        name: format_html('<time class="local-time" datetime="{}">{}</time>', moment.isoformat(), when(moment))
        for name, moment in moments.items()
    }
    return mark_safe(conditional_escape(words) % times)


def _detail(event: ShareEvent) -> str:
    kind = ShareEvent.Kind
    if event.kind == kind.RENEWED and event.old_expires_at and event.expires_at:
        return _with_moments(_("from %(old)s to %(new)s"), old=event.old_expires_at, new=event.expires_at)
    if event.kind == kind.CREATED and event.expires_at:
        return _with_moments(_("expires %(when)s"), when=event.expires_at)
    if event.kind == kind.EXPIRED and event.lateness is not None:
        return _milliseconds(event.lateness)
    if event.kind in (kind.DOWNLOADED, kind.RESUMED, kind.WRONG_PASSWORD):
        parts = []
        if event.bytes is not None:
            parts.append(file_size(event.bytes))
        parts += [part for part in (event.client_address, event.user_agent) if part]
        return " · ".join(str(part) for part in parts)
    if event.kind == kind.CHANGED:
        changes = []
        if "max_downloads" in event.details:
            old, new = event.details["max_downloads"]
            unlimited = _("unlimited")
            changes.append(_("download limit %(old)s → %(new)s") % {"old": old or unlimited, "new": new or unlimited})
        for name in ("password", "message"):
            change = event.details.get(name)
            if change is not None:
                words = CHANGE_WORDS.get((name, change))
                changes.append(str(words) if words else f"{name} {change}")
        return ", ".join(changes)
    return ""


def history(share: Share) -> list[HistoryLine]:
    events = list(share.events.exclude(kind=ShareEvent.Kind.DELIVERED).order_by("-at", "-id")[:HISTORY_LINES])
    downloads = [event.pk for event in events if event.kind in (ShareEvent.Kind.DOWNLOADED, ShareEvent.Kind.RESUMED)]
    receipts = of_events(downloads) if downloads else {}
    lines = []
    for event in events:
        detail = _detail(event)
        delivered = delivery_words(event, receipts.get(event.pk))
        if delivered:
            detail = format_html("{} · {}", delivered, detail) if detail else delivered
        lines.append(
            HistoryLine(
                at=when(event.at),
                at_iso=event.at.isoformat(),
                what=event.get_kind_display().capitalize(),
                detail=detail,
            )
        )
    return lines
