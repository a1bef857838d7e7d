"""API tokens in the admin: listed, and revoked by deleting them. None is
made here, since a key is shown only to whoever issues it; DRF's own token
admin goes, its plain keys being no way in any more."""

from django.contrib import admin
from rest_framework.authtoken.models import TokenProxy

from tokens.models import ApiToken

admin.site.unregister(TokenProxy)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("name", "user", "created_at", "expires_at")
    list_select_related = ("user",)
    search_fields = ("name", "user__username")
    readonly_fields = ("user", "name", "created_at", "expires_at")
    fields = readonly_fields

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
