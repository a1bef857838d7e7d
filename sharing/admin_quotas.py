"""The admin's side of storage quotas: each user's account (what their files
take, and a quota of their own), and the size field the policy's default
quota uses too ("10 GB" rather than a count of bytes)."""

import re

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.template.defaultfilters import filesizeformat
from django.utils.translation import gettext as _

from sharing.models import SharingPolicy, StorageAccount

UNITS = {
    "": 1,
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
}
# At most 30 digits each side: a longer number is no size (and as a float, infinite).
SIZE = re.compile(r"\s*(\d{1,30}(?:\.\d{1,30})?)\s*([a-zA-Z]*)\s*")


def parse_size(text: str) -> int:
    """ "10 GB", "1.5 GiB", "500mb" or a plain number of bytes, as bytes."""
    match = SIZE.fullmatch(text)
    if match is None or match[2].lower() not in UNITS:
        raise ValidationError(
            _("Enter a size such as 500 MB, 10 GB or 1.5 GiB (or a number of bytes)."), code="invalid_size"
        )
    return int(float(match[1]) * UNITS[match[2].lower()])


class ByteSizeField(forms.CharField):
    """A size typed as people write it; empty is None (no quota of its own, or unlimited)."""

    def prepare_value(self, value):
        if isinstance(value, int):
            return filesizeformat(value).replace("\xa0", " ")
        return value

    def to_python(self, value):
        text = super().to_python(value)
        return parse_size(text) if text else None


class StorageAccountForm(forms.ModelForm):
    quota_bytes = ByteSizeField(
        required=False,
        label="Quota",
        help_text="Storage this user's files may take, e.g. 20 GB; empty: the sharing policy's default quota.",
    )

    class Meta:
        model = StorageAccount
        fields = ["quota_bytes"]


@admin.register(StorageAccount)
class StorageAccountAdmin(admin.ModelAdmin):
    form = StorageAccountForm
    list_display = ("user", "used", "reserved", "quota", "free")
    search_fields = ("user__username", "user__email")
    ordering = ("user__username",)
    fields = ("user", "used", "reserved", "quota_bytes", "free")
    readonly_fields = ("user", "used", "reserved", "free")
    list_select_related = ("user",)

    def get_queryset(self, request):
        self._policy = SharingPolicy.current()  # one read per page, not one per row
        return super().get_queryset(request)

    def has_add_permission(self, request):
        return False  # an account is made with a user's first upload

    @admin.display(description="used", ordering="used_bytes")
    def used(self, account):
        return filesizeformat(account.used_bytes)

    @admin.display(description="reserved for uploads", ordering="reserved_bytes")
    def reserved(self, account):
        return filesizeformat(account.reserved_bytes)

    @admin.display(description="quota")
    def quota(self, account):
        quota = account.quota(getattr(self, "_policy", None))
        if quota is None:
            return "unlimited"
        return filesizeformat(quota) + ("" if account.quota_bytes is not None else " (the default)")

    @admin.display(description="free")
    def free(self, account):
        free = account.free(getattr(self, "_policy", None))
        return "unlimited" if free is None else filesizeformat(free)
