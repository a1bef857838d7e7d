"""Resumable uploads in the admin: read only (the protocol alone changes
them), searchable by owner and file name."""

from django.contrib import admin
from django.template.defaultfilters import filesizeformat

from uploads.models import Upload


@admin.register(Upload)
class UploadAdmin(admin.ModelAdmin):
    list_display = ["filename", "owner", "progress", "created_at", "expires_at", "finished_at", "file"]
    list_filter = [("finished_at", admin.EmptyFieldListFilter)]
    search_fields = ["owner__username", "filename"]
    list_select_related = ["owner", "file"]
    readonly_fields = [field.name for field in Upload._meta.fields]
    fields = readonly_fields

    @admin.display(description="received")
    def progress(self, upload):
        return f"{filesizeformat(upload.offset)} of {filesizeformat(upload.length)}"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
