"""The share list's filters in admin: by the status a client sees, by how
soon a share expires, and by how it ended."""

from datetime import timedelta

from django.contrib import admin
from django.utils import timezone

from sharing.models import Share


class EffectiveStatusFilter(admin.SimpleListFilter):
    """Status as a client sees it: an active share past its deadline is expired."""

    title = "status"
    parameter_name = "status"

    def lookups(self, request, model_admin):
        return Share.Status.choices

    def queryset(self, request, queryset):
        if self.value() is None:
            return queryset
        return queryset.with_effective_status(self.value(), timezone.now())


class ExpiresWithinFilter(admin.SimpleListFilter):
    """Active shares whose deadline lies between now and now + the window."""

    title = "expires within"
    parameter_name = "expires_within"
    WINDOWS = {
        "1h": ("1 h", timedelta(hours=1)),
        "24h": ("24 h", timedelta(hours=24)),
        "7d": ("7 d", timedelta(days=7)),
    }

    def lookups(self, request, model_admin):
        return [(key, label) for key, (label, _window) in self.WINDOWS.items()]

    def queryset(self, request, queryset):
        if self.value() is None:
            return queryset
        if self.value() not in self.WINDOWS:
            return queryset.none()
        now = timezone.now()
        window = self.WINDOWS[self.value()][1]
        return queryset.servable(now).filter(expires_at__lte=now + window)


class EndReasonFilter(admin.SimpleListFilter):
    """How a share ended: by time, by its download limit, unshared, file deleted."""

    title = "ended by"
    parameter_name = "end_reason"

    def lookups(self, request, model_admin):
        return Share.EndReason.choices

    def queryset(self, request, queryset):
        if self.value() is None:
            return queryset
        if self.value() not in Share.EndReason.values:
            return queryset.none()
        return queryset.filter(end_reason=self.value())
