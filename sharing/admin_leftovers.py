"""The Django admin's list of pending deletions: bytes of deleted files that
the storage has not deleted yet (sharing.models.leftovers). Read only: the
expiry daemon retries them, and deleting a record by hand would only lose
track of bytes still stored."""

from django.contrib import admin

from sharing.models import BytesToDelete


@admin.register(BytesToDelete)
class BytesToDeleteAdmin(admin.ModelAdmin):
    list_display = ("name", "since", "attempts", "retry_at", "last_error")
    fields = list_display
    search_fields = ("name",)
    search_help_text = "Search by the bytes' name in the storage (a deleted file's “stored as”)."
    ordering = ("since", "id")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
