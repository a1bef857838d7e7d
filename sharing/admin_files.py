"""The Django admin for stored files, with the most recent shares of each.

Deleting goes through sharing.models.delete_file (each share unshared by
its conditional UPDATE), never a plain delete().
"""

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import Count, Prefetch
from django.forms.models import BaseInlineFormSet
from django.template.defaultfilters import filesizeformat
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from sharing.models import ScanState, Share, ShareItem, StoredFile, clean_file_name, delete_file
from sharing.models.scans import queue_rescan

# The share list's query parameter for "the shares that hold this file".
SHARES_OF_FILE = "items__file__id__exact"


def plural(count: int, word: str = "share") -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


class RecentSharesFormSet(BaseInlineFormSet):
    """Only the most recent shares: a file shared thousands of times would
    otherwise render (and load) every one of them on its page."""

    def get_queryset(self):
        if not hasattr(self, "_recent"):
            self._recent = super().get_queryset().order_by("-share_id")[: ShareInline.MAX_SHOWN]
        return self._recent


class ShareInline(admin.TabularInline):
    """The shares that hold the file (one row per share)."""

    MAX_SHOWN = 100

    model = ShareItem
    formset = RecentSharesFormSet
    fields = ("token", "files_in_share", "effective_status", "expires_at", "total_downloads")
    readonly_fields = fields
    extra = 0
    can_delete = False
    verbose_name = "share"
    verbose_name_plural = "shares"

    @admin.display(description="token")
    def token(self, item):
        url = reverse(f"{self.admin_site.name}:sharing_share_change", args=[item.share_id])
        return format_html('<a href="{}">{}</a>', url, item.share.token)

    @admin.display(description="files")
    def files_in_share(self, item):
        return len(item.share.files)

    @admin.display(description="status")
    def effective_status(self, item):
        return item.share.effective_status()

    @admin.display(description="expires at")
    def expires_at(self, item):
        return item.share.expires_at

    @admin.display(description="downloads")
    def total_downloads(self, item):
        return item.share.total_downloads

    def get_queryset(self, request):
        shares = Share.objects.prefetch_related("items__file").with_pending_downloads()
        return super().get_queryset(request).prefetch_related(Prefetch("share", queryset=shares))

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class StoredFileAdminForm(forms.ModelForm):
    """The display name, refused with a message when it is not one
    clean_file_name would keep as it is (StoredFile.save cleans it anyway)."""

    class Meta:
        model = StoredFile
        fields = ["name"]

    def clean_name(self):
        name = self.cleaned_data["name"]
        cleaned = clean_file_name(name)
        if cleaned != name:
            raise ValidationError(
                "A file name cannot hold line breaks, other control characters or slashes: it is sent in "
                "the headers of every download and must not name a folder. Suggested: “%(cleaned)s”.",
                code="unclean",
                params={"cleaned": cleaned},
            )
        return name


class ScanWaitingFilter(admin.SimpleListFilter):
    """Files queued for a scan (new, retried, or rescanned): what the scan
    workers have left to do."""

    title = "scan queue"
    parameter_name = "scan_queue"

    def lookups(self, request, model_admin):
        return [("waiting", "waiting for a scan"), ("claimed", "being scanned now")]

    def queryset(self, request, queryset):
        if self.value() == "waiting":
            return queryset.filter(scan_due_at__isnull=False)
        if self.value() == "claimed":
            return queryset.filter(scan_due_at__isnull=False, scan_claimed_at__isnull=False)
        return queryset


@admin.register(StoredFile)
class StoredFileAdmin(admin.ModelAdmin):
    form = StoredFileAdminForm
    list_display = ("name", "owner", "human_size", "content_type", "created_at", "share_count", "scan")
    list_filter = ("scan_state", ScanWaitingFilter)
    actions = ("rescan",)
    list_select_related = ("owner",)
    search_fields = ("name", "owner__username", "^sha256")
    search_help_text = "Search by file name, owner username or the start of the SHA-256."
    ordering = ("-id",)
    inlines = (ShareInline,)
    # Only the display name is editable: the rest describes the stored bytes,
    # and changing the owner would split a file from its shares' owner. The
    # uploader chose delete_when_unshared; the admin only shows it.
    readonly_fields = ("owner", "human_size", "content_type", "sha256", "stored_as", "created_at")
    readonly_fields += ("delete_when_unshared", "all_shares", "scan", "scanned_at", "scan_attempts")
    fields = ("name", *readonly_fields)

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(share_count=Count("share_items"))

    @admin.display(description="size", ordering="size")
    def human_size(self, stored):
        return filesizeformat(stored.size)

    @admin.display(description="shares", ordering="share_count")
    def share_count(self, stored):
        return stored.share_count

    @admin.display(description="shares")
    def all_shares(self, stored):
        url = reverse(f"{self.admin_site.name}:sharing_share_changelist")
        shown = min(stored.share_count, ShareInline.MAX_SHOWN)
        return format_html(
            '{} in all, the {} most recent below; <a href="{}?{}={}">list them all</a>',
            stored.share_count,
            shown,
            url,
            SHARES_OF_FILE,
            stored.pk,
        )

    @admin.display(description="scan", ordering="scan_state")
    def scan(self, stored):
        """The scan state, its signature when infected, and whether it waits."""
        shown = stored.get_scan_state_display()
        if stored.scan_state == ScanState.INFECTED:
            shown = f"{shown}: {stored.scan_signature}"
        if stored.scan_due_at is not None:
            shown = f"{shown} (queued)"
        return shown

    @admin.action(description="Scan the selected files again (after a signature update)")
    def rescan(self, request, queryset):
        queued = queue_rescan(queryset, timezone.now())
        left_out = queryset.count() - queued
        note = f"; {left_out} left alone (infected, or already queued)" if left_out else ""
        self.message_user(request, f"Queued {plural(queued, 'file')} for a scan{note}.", messages.INFO)

    @admin.display(description="stored as")
    def stored_as(self, stored):
        # Plain text, not a link: the bytes are never served from MEDIA_URL.
        return stored.content.name

    def has_add_permission(self, request):
        # Uploads go through the API, which hashes and measures the bytes.
        return False

    def delete_model(self, request, obj):
        unshared = delete_file(obj)
        if unshared:
            self.message_user(request, f"Unshared {plural(unshared)} of “{obj.name}”.", messages.INFO)

    def delete_queryset(self, request, queryset):
        unshared = sum(delete_file(stored) for stored in queryset)
        if unshared:
            self.message_user(request, f"Unshared {plural(unshared)} of the deleted files.", messages.INFO)
