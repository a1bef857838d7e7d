"""Second factors in the admin: listed, and removed (with the user's
recovery codes) for someone who lost both the phone and the codes. None is
made or read here: the secret stays out of every page."""

from django.contrib import admin

from signin import recovery
from signin.models import TotpDevice


@admin.register(TotpDevice)
class TotpDeviceAdmin(admin.ModelAdmin):
    list_display = ("user", "created_at")
    list_select_related = ("user",)
    search_fields = ("user__username",)
    readonly_fields = ("user", "created_at")
    fields = readonly_fields

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def delete_model(self, request, obj):
        recovery.delete_codes(obj.user)
        super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        for device in queryset.select_related("user"):
            recovery.delete_codes(device.user)
        super().delete_queryset(request, queryset)
