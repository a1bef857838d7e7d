"""Uploading and deleting files from the owner pages.

An upload answers a person (a redirect to the dashboard, or the dashboard
again with the error) or the page's script, which sends one file a request
to show each one's progress and asks for JSON.
"""

from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views import View
from django.views.generic import TemplateView

from pages.forms import UploadForm
from pages.security import PageHeadersMixin, with_page_headers
from sharing.models import QuotaExceeded, Share, StoredFile, delete_file
from web.views.dashboard import DashboardView


def wants_json(request) -> bool:
    return "application/json" in request.headers.get("Accept", "")


class UploadView(LoginRequiredMixin, View):
    http_method_names = ["post"]

    def post(self, request):
        form = UploadForm(request.POST, request.FILES)
        if not form.is_valid():
            status = 413 if form.too_large else 400
            if wants_json(request):
                detail = " ".join(form.errors.get("files", [])) or _("The upload was refused.")
                return with_page_headers(JsonResponse({"detail": detail}, status=status))
            # The dashboard again, the form showing what was wrong.
            dashboard = DashboardView()
            dashboard.setup(request)
            response = dashboard.get(request, upload_form=form)
            response.status_code = status
            return with_page_headers(response)
        uploads = form.cleaned_data["files"]
        stored = []
        for upload in uploads:
            try:
                stored.append(StoredFile.create_from_upload(owner=request.user, upload=upload))
            except QuotaExceeded as refused:
                return self.over_quota(request, form, stored, upload, refused)
        if wants_json(request):
            files = [{"id": item.pk, "name": item.name, "size": item.size} for item in stored]
            return with_page_headers(JsonResponse({"files": files}, status=201))
        names = ", ".join(item.name for item in stored)
        messages.success(
            request, ngettext("Uploaded %(names)s.", "Uploaded %(names)s.", len(stored)) % {"names": names}
        )
        # The file list's first page, unfolded: the new files are on top, ready to share.
        return redirect(reverse("web:dashboard") + "?files_page=1#files")

    def over_quota(self, request, form, stored, upload, refused):
        """A 413 naming the file that did not fit (those before it are kept)."""
        detail = _("%(name)s was not uploaded. %(reason)s") % {"name": upload.name, "reason": refused.messages[0]}
        if wants_json(request):
            return with_page_headers(JsonResponse({"detail": detail}, status=413))
        if stored:
            names = ", ".join(item.name for item in stored)
            messages.success(request, _("Uploaded %(names)s.") % {"names": names})
        form.add_error("files", detail)
        dashboard = DashboardView()
        dashboard.setup(request)
        response = dashboard.get(request, upload_form=form)
        response.status_code = 413
        return with_page_headers(response)


class FileDeleteView(LoginRequiredMixin, PageHeadersMixin, TemplateView):
    """GET asks for confirmation, saying how many live links the deletion
    ends; POST deletes (the model ends the shares and removes the bytes)."""

    template_name = "web/file_delete.html"

    def get_file(self) -> StoredFile:
        # Another user's file is a 404, the same as a missing one.
        return get_object_or_404(StoredFile, pk=self.kwargs["pk"], owner=self.request.user)

    def get_context_data(self, **kwargs):
        stored = self.get_file()
        live = Share.objects.holding(stored.pk).servable(timezone.now()).count()
        return super().get_context_data(file=stored, live_links=live, **kwargs)

    def post(self, request, pk):
        stored = self.get_file()
        name = stored.name
        ended = delete_file(stored)
        messages.success(
            request,
            ngettext(
                "Deleted %(name)s; %(count)s live link ended.",
                "Deleted %(name)s; %(count)s live links ended.",
                ended,
            )
            % {"name": name, "count": ended},
        )
        return redirect("web:dashboard")
