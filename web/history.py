"""A share's history as its owner reads it on the share page: one line per
ShareEvent, newest first, in plain words."""

from dataclasses import dataclass
from datetime import timedelta

from django.template.defaultfilters import filesizeformat
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from sharing.models import Share, ShareEvent
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


def _detail(event: ShareEvent) -> str:
    kind = ShareEvent.Kind
    if event.kind == kind.RENEWED and event.old_expires_at and event.expires_at:
        return _("from %(old)s to %(new)s") % {"old": when(event.old_expires_at), "new": when(event.expires_at)}
    if event.kind == kind.CREATED and event.expires_at:
        return _("expires %(when)s") % {"when": when(event.expires_at)}
    if event.kind == kind.EXPIRED and event.lateness is not None:
        return _milliseconds(event.lateness)
    if event.kind in (kind.DOWNLOADED, kind.RESUMED, kind.WRONG_PASSWORD):
        parts = []
        if event.bytes is not None:
            parts.append(filesizeformat(event.bytes))
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
    events = share.events.order_by("-at", "-id")[:HISTORY_LINES]
    return [
        HistoryLine(
            at=when(event.at),
            at_iso=event.at.isoformat(),
            what=event.get_kind_display().capitalize(),
            detail=_detail(event),
        )
        for event in events
    ]
