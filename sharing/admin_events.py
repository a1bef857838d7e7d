"""Share history in the admin: read only, like the history itself.

Events are written only by the model methods, in the transaction of the
change they record (sharing.models.events); the admin never adds, edits or
deletes one, so what it shows is what happened.
"""

from datetime import timedelta

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from sharing.models import ShareEvent
from sharing.models.events import SHOWN_FIELDS


class ReadOnlyAdminMixin:
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


def _lateness_ms(event: ShareEvent):
    if event.lateness is None:
        return None
    return round(event.lateness / timedelta(milliseconds=1), 3)


def _expiry(event: ShareEvent) -> str:
    if event.old_expires_at is not None:
        return f"{event.old_expires_at:%Y-%m-%d %H:%M:%S} → {event.expires_at:%Y-%m-%d %H:%M:%S}"
    if event.expires_at is not None:
        return f"{event.expires_at:%Y-%m-%d %H:%M:%S}"
    return ""


class ShareHistoryMixin:
    """The share page's "history": its most recent events, and a link to all.

    A read-only field rather than an inline: an inline's formset would be
    posted back with the expiry form, and a download recorded meanwhile
    would make that form fail.
    """

    HISTORY_SHOWN = 20

    @admin.display(description="history")
    def history(self, share):
        url = reverse(f"{self.admin_site.name}:sharing_shareevent_changelist")
        count = share.events.count()
        recent = share.events.order_by("-at", "-id")[: self.HISTORY_SHOWN]
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            ((f"{event.at:%Y-%m-%d %H:%M:%S.%f}"[:-3], event.get_kind_display(), _summary(event)) for event in recent),
        )
        return format_html(
            '<a href="{}?share__id__exact={}">All {} events</a>; the {} most recent, newest first:'
            "<table><thead><tr><th>at (UTC)</th><th>event</th><th>details</th></tr></thead><tbody>{}</tbody></table>",
            url,
            share.pk,
            count,
            min(count, self.HISTORY_SHOWN),
            rows,
        )


def _summary(event: ShareEvent) -> str:
    """One line of what an event says beyond its kind."""
    parts = [_expiry(event)]
    if event.lateness is not None:
        parts.append(f"{_lateness_ms(event)} ms late")
    if event.bytes is not None:
        parts.append(f"{event.bytes} bytes")
    if event.client_address:
        parts.append(event.client_address)
    if event.user_agent:
        parts.append(event.user_agent[:80])
    if event.details:
        parts.append(", ".join(f"{key}: {value}" for key, value in event.details.items()))
    return "; ".join(part for part in parts if part)


@admin.register(ShareEvent)
class ShareEventAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("at", "kind", "share_link", "expiry", "lateness_ms", "bytes", "client_address")
    list_filter = ("kind", ("at", admin.DateFieldListFilter))
    search_fields = ("=share__token", "share__items__file__name", "share__owner__username", "=client_address")
    search_help_text = "Search by the share's full token, its file name, its owner's username, or an exact address."
    # Newest first by primary key (insertion order): an index of its own.
    ordering = ("-id",)
    fields = ("share_link", *SHOWN_FIELDS)
    readonly_fields = fields

    @admin.display(description="share", ordering="share")
    def share_link(self, event):
        url = reverse(f"{self.admin_site.name}:sharing_share_change", args=[event.share_id])
        return format_html('<a href="{}">share {}</a>', url, event.share_id)

    @admin.display(description="expiry")
    def expiry(self, event):
        return _expiry(event)

    @admin.display(description="lateness (ms)", ordering="lateness")
    def lateness_ms(self, event):
        return _lateness_ms(event)
