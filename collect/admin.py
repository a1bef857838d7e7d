from django.contrib import admin

from collect.models import ReceivedFile, UploadRequest


class ReceivedFileInline(admin.TabularInline):
    model = ReceivedFile
    fields = ["name", "size", "started_at", "finished_at", "file"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(UploadRequest)
class UploadRequestAdmin(admin.ModelAdmin):
    list_display = ["__str__", "owner", "expires_at", "ended_at", "end_reason", "files_taken", "bytes_taken"]
    list_filter = ["end_reason", "notify_by_email"]
    search_fields = ["title", "owner__username", "owner__email", "token"]
    readonly_fields = ["token", "files_taken", "bytes_taken", "created_at", "ended_at", "end_reason"]
    fields = ["owner", "title", "note", "expires_at", "max_files", "max_bytes", "notify_by_email", *readonly_fields]
    raw_id_fields = ["owner"]
    date_hierarchy = "created_at"
    inlines = [ReceivedFileInline]

    def has_add_permission(self, request):
        return False  # made by owners (API, web), with a password hashed and the daemon told
