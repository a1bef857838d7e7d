"""The Django admin for shares and the sharing policy (files: admin_files.py;
pending deletions of their bytes: admin_leftovers.py).

Every state change made here goes through the model methods (Share.unshare,
Share.set_expiry, sharing.models.delete_file), never a plain save(): those
are single conditional UPDATEs, so an admin racing the expiry daemon or an API
client can never resurrect an ended share or overwrite a newer state with the
stale copy the form was built from.
"""

from datetime import timedelta

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Case, DurationField, ExpressionWrapper, F, When
from django.http import HttpResponseRedirect
from django.urls import reverse
from django.utils import timezone

from sharing.admin_events import ShareHistoryMixin
from sharing.admin_files import SHARES_OF_FILE, plural  # and registers the file admin
from sharing.admin_filters import EffectiveStatusFilter, EndReasonFilter, ExpiresWithinFilter
from sharing.admin_leftovers import BytesToDeleteAdmin  # noqa: F401  registers the pending deletions' list
from sharing.admin_quotas import ByteSizeField  # and registers the storage account admin
from sharing.models import Share, SharingPolicy, format_duration

EXTENSION = timedelta(days=7)
EMPTY = "—"

_UNITS = (("d", 86400), ("h", 3600), ("min", 60), ("s", 1))


def format_time_left(remaining: timedelta | None) -> str:
    """Two largest units of a remaining time, e.g. "2 h 5 min", "3 d 4 h".

    "—" when nothing is left (or there is no deadline any more).
    """
    if remaining is None or remaining <= timedelta(0):
        return EMPTY
    seconds = int(remaining.total_seconds())
    if seconds == 0:
        return "< 1 s"
    for index, (unit, size) in enumerate(_UNITS):
        if seconds >= size:
            parts = [f"{seconds // size} {unit}"]
            if index + 1 < len(_UNITS):
                next_unit, next_size = _UNITS[index + 1]
                count = seconds % size // next_size
                if count:
                    parts.append(f"{count} {next_unit}")
            return " ".join(parts)
    return EMPTY  # unreachable: seconds >= 1 matches the last unit


admin.site.site_header = "Microcloud administration"
admin.site.site_title = "Microcloud admin"


# --- Shares -----------------------------------------------------------------


class ShareAdminForm(forms.ModelForm):
    """Only expires_at is editable; it is checked like an API renewal."""

    class Meta:
        model = Share
        fields = ["expires_at"]

    def clean_expires_at(self):
        expires_at = self.cleaned_data["expires_at"]
        if "expires_at" not in self.changed_data:
            return expires_at
        now = timezone.now()
        if not self.instance.is_servable(now):
            raise ValidationError("This share has ended; its expiry can no longer be changed.")
        try:
            SharingPolicy.current().resolve_expires_at(now=now, expires_at=expires_at)
        except ValidationError as exc:
            raise ValidationError(exc.message_dict["expires_at"]) from None
        return expires_at


_LATENESS = Case(
    When(
        status=Share.Status.EXPIRED,
        then=ExpressionWrapper(F("ended_at") - F("expires_at"), output_field=DurationField()),
    ),
    default=None,
    output_field=DurationField(),
)


@admin.register(Share)
class ShareAdmin(ShareHistoryMixin, admin.ModelAdmin):
    form = ShareAdminForm
    list_display = (
        "token_short",
        "files_shown",
        "owner",
        "effective_status",
        "created",
        "expires",
        "time_left",
        "downloads",
        "lateness_ms",
    )
    list_display_links = ("token_short", "files_shown")
    list_select_related = ("owner",)
    list_filter = (EffectiveStatusFilter, ExpiresWithinFilter, EndReasonFilter)
    search_fields = ("=token", "items__file__name", "owner__username")
    search_help_text = "Search by full token, file name or owner username."
    # Newest first by primary key (insertion order): the model's -created_at
    # ordering has no index of its own, and on 1e6 shares sorting by it costs
    # ~0.4 s per page on SQLite. No date_hierarchy for the same reason: its
    # per-row date truncation took ~8 s there.
    ordering = ("-id",)
    empty_value_display = EMPTY
    actions = ("unshare_selected", "extend_by_7_days")

    def lookup_allowed(self, lookup, value, request=None):
        # The file page links to the shares that hold it.
        return lookup == SHARES_OF_FILE or super().lookup_allowed(lookup, value, request)

    def get_queryset(self, request):
        # The downloads column shows every download, folded or not; the
        # files column names the files (prefetched for the page).
        return super().get_queryset(request).with_pending_downloads().prefetch_related("items__file")

    fields = (
        "files_shown",
        "owner",
        "token",
        "effective_status",
        "expires_at",
        "time_left",
        "status",
        "end_reason",
        "ended_at",
        "lateness_ms",
        "total_downloads",
        "max_downloads",
        "downloads_left",
        "has_password",
        "message",
        "created_at",
        "updated_at",
        "history",
    )
    # files and owner too: re-pointing a share at other files (or user) is not
    # something the product does, and would hand one user's link to another.
    readonly_fields = tuple(name for name in fields if name != "expires_at")

    # --- columns -------------------------------------------------------------

    @admin.display(description="token", ordering="token")
    def token_short(self, share):
        return f"{share.token[:10]}…"

    @admin.display(description="status", ordering="status")
    def effective_status(self, share):
        return share.effective_status()

    @admin.display(description="files")
    def files_shown(self, share):
        return share.title

    @admin.display(description="created", ordering="created_at")
    def created(self, share):
        return share.created_at

    @admin.display(description="expires", ordering="expires_at")
    def expires(self, share):
        return share.expires_at

    @admin.display(description="time left", ordering="expires_at")
    def time_left(self, share):
        if share.status != Share.Status.ACTIVE:
            return EMPTY
        return format_time_left(share.expires_at - timezone.now())

    @admin.display(description="downloads", ordering="download_count")
    def downloads(self, share):
        """The downloads started, and the limit with the whole copies its byte budget still holds."""
        if share.max_downloads is None:
            return share.total_downloads
        return f"{share.download_count} started; {share.downloads_left} of {share.max_downloads} left"

    @admin.display(description="downloads left")
    def downloads_left(self, share):
        return "unlimited" if share.max_downloads is None else share.downloads_left

    @admin.display(description="password", boolean=True)
    def has_password(self, share):
        return share.has_password

    @admin.display(description="lateness (ms)", ordering=_LATENESS)
    def lateness_ms(self, share):
        lateness = share.lateness
        if lateness is None:
            return None
        # Sub-millisecond lateness is the normal case: keep three decimals.
        return round(lateness / timedelta(milliseconds=1), 3)

    # --- permissions and form ------------------------------------------------

    def has_add_permission(self, request):
        # Shares are created through the API, which applies the policy.
        return False

    def has_delete_permission(self, request, obj=None):
        # Ended shares are kept for history; "Unshare selected" ends a link.
        return False

    def get_readonly_fields(self, request, obj=None):
        readonly = super().get_readonly_fields(request, obj)
        if obj is not None and not obj.is_servable():
            readonly = (*readonly, "expires_at")
        return readonly

    def save_model(self, request, obj, form, change):
        """Apply an edited expires_at with Share.set_expiry, never obj.save().

        The form is the only way here (add is disabled), and its only field
        is expires_at. A plain save would write back every column of the copy
        loaded with the form, undoing an expiry or unshare committed since.
        """
        request.share_expiry_refused = False  # read by log_change and response_change below
        if not change or "expires_at" not in form.changed_data:
            return
        if not obj.set_expiry(form.cleaned_data["expires_at"]):
            request.share_expiry_refused = True
            self.message_user(
                request,
                "The share ended before the new expiry could be saved; nothing was changed.",
                messages.ERROR,
            )

    def log_change(self, request, obj, message):
        if getattr(request, "share_expiry_refused", False):
            return None
        return super().log_change(request, obj, message)

    def response_change(self, request, obj):
        if getattr(request, "share_expiry_refused", False):
            return HttpResponseRedirect(request.path)
        return super().response_change(request, obj)

    # --- actions ---------------------------------------------------------------

    @admin.action(description="Unshare selected shares", permissions=["change"])
    def unshare_selected(self, request, queryset):
        changed = skipped = 0
        for share in queryset:
            if share.unshare():
                changed += 1
            else:
                skipped += 1
        message = f"Unshared {plural(changed)}."
        if skipped:
            message += f" Skipped {plural(skipped)} that had already ended."
        self.message_user(request, message, messages.SUCCESS if changed else messages.WARNING)

    @admin.action(description="Extend selected shares by 7 days", permissions=["change"])
    def extend_by_7_days(self, request, queryset):
        """Push each active share's deadline 7 days later, within the policy.

        The maximum lifetime counts from now, as for an API renewal: a share
        that would end later is extended only up to that limit, and one whose
        deadline is already at or beyond it is left alone.
        """
        policy = SharingPolicy.current()
        extended = clamped = ended = at_limit = 0
        for share in queryset:
            now = timezone.now()
            if not share.is_servable(now):
                ended += 1
                continue
            limit = now + policy.max_lifetime
            target = share.expires_at + EXTENSION
            was_clamped = target > limit
            if was_clamped:
                target = limit
            if target <= share.expires_at:
                at_limit += 1
                continue
            if not share.set_expiry(target):
                ended += 1  # ended between the check above and the update
                continue
            extended += 1
            clamped += was_clamped
        message = f"Extended {plural(extended)} by 7 days."
        if clamped:
            limit_text = format_duration(policy.max_lifetime)
            message += f" {clamped} of them only up to the maximum lifetime ({limit_text} from now)."
        if ended:
            message += f" Skipped {plural(ended)} that had already ended."
        if at_limit:
            message += f" Skipped {plural(at_limit)} already at or beyond the maximum lifetime."
        self.message_user(request, message, messages.SUCCESS if extended else messages.WARNING)


# --- Sharing policy ---------------------------------------------------------


class SharingPolicyForm(forms.ModelForm):
    default_quota_bytes = ByteSizeField(
        required=False,
        label="Default quota",
        help_text="Storage each user's files may take (e.g. 10 GB), unless the user has a quota of their own "
        "(Storage accounts); empty: unlimited.",
    )

    class Meta:
        model = SharingPolicy
        fields = ["default_lifetime", "max_lifetime", "ended_retention", "reminder_lead", "default_quota_bytes"]

    FORMAT_HINT = " Format: “days hh:mm:ss”, e.g. “7 00:00:00” for seven days or “01:30:00” for 90 minutes."

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name, field in self.fields.items():
            if name != "default_quota_bytes":
                field.help_text = f"{field.help_text}{self.FORMAT_HINT}"


@admin.register(SharingPolicy)
class SharingPolicyAdmin(admin.ModelAdmin):
    """A singleton: the list page opens the one row, created with defaults."""

    form = SharingPolicyForm
    fields = ("default_lifetime", "max_lifetime", "ended_retention", "reminder_lead", "default_quota_bytes")

    def changelist_view(self, request, extra_context=None):
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        policy, _created = SharingPolicy.objects.get_or_create(pk=SharingPolicy.SINGLETON_ID)
        opts = self.model._meta
        return HttpResponseRedirect(
            reverse(f"{self.admin_site.name}:{opts.app_label}_{opts.model_name}_change", args=[policy.pk])
        )

    def has_add_permission(self, request):
        return super().has_add_permission(request) and not SharingPolicy.objects.exists()

    def has_delete_permission(self, request, obj=None):
        return False
