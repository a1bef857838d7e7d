"""The dashboard: the owner's files (with the upload form) and shares, and
the small JSON answer that keeps the shares' rows live."""

from django.conf import settings
from django.contrib.auth.mixins import LoginRequiredMixin
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import JsonResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.views import View
from django.views.generic import TemplateView

from pages.forms import UploadForm
from pages.security import PageHeadersMixin, with_page_headers
from sharing.models import Share, StoredFile
from sharing.models.state import servable_q
from uploads.writing import page_chunk
from web.presenters import share_rows
from web.storage import storage_of

PAGE_SIZE = 20
# The dashboard's tabs: (query value, label); "" is every share.
STATUS_TABS = [
    ("", _("All")),
    (Share.Status.ACTIVE, _("Active")),
    (Share.Status.EXPIRED, _("Expired")),
    (Share.Status.UNSHARED, _("Unshared")),
]
LIVE_IDS_MAX = 200  # more than any page shows


def files_with_live_links(user, now):
    live = servable_q(now, prefix="share_items__share__")
    files = StoredFile.objects.filter(owner=user).annotate(live_links=Count("share_items", filter=live))
    return files.order_by("-created_at", "-id")  # a GROUP BY drops Meta.ordering


class DashboardView(LoginRequiredMixin, PageHeadersMixin, TemplateView):
    template_name = "web/dashboard.html"

    def get_context_data(self, *, upload_form=None, **kwargs):
        request, now = self.request, timezone.now()  # one clock for the whole page
        status = request.GET.get("status", "")
        if status not in dict(STATUS_TABS):
            status = ""
        shares = Share.objects.filter(owner=request.user).prefetch_related("items__file").with_pending_downloads()
        if status:
            shares = shares.with_effective_status(status, now)
        share_page = Paginator(shares, PAGE_SIZE).get_page(request.GET.get("page"))
        file_page = Paginator(files_with_live_links(request.user, now), PAGE_SIZE).get_page(
            request.GET.get("files_page")
        )
        return super().get_context_data(
            upload_form=upload_form or UploadForm(),
            max_upload_bytes=settings.MAX_UPLOAD_BYTES,
            tus_endpoint=reverse("tus-uploads"),
            tus_chunk_bytes=page_chunk(),
            storage=storage_of(request.user),
            file_page=file_page,
            share_page=share_page,
            rows=share_rows(share_page, now),
            status=status,
            tabs=STATUS_TABS,
            **kwargs,
        )


class LiveSharesView(LoginRequiredMixin, View):
    """GET ?ids=1,2,3: the current state of those of the owner's shares, as
    the dashboard's script shows it. Another user's id is simply absent."""

    def get(self, request):
        parts = [part.strip() for part in request.GET.get("ids", "").split(",")]
        valid = all(part.isascii() and part.isdigit() and len(part) < 19 for part in parts)
        wanted = [int(part) for part in parts] if valid else []
        if not wanted or len(wanted) > LIVE_IDS_MAX:
            response = JsonResponse({"detail": f"Give 1 to {LIVE_IDS_MAX} share ids as ?ids=1,2,3."}, status=400)
            return with_page_headers(response)
        now = timezone.now()
        shares = Share.objects.filter(owner=request.user, pk__in=wanted).with_pending_downloads()
        states = {share.pk: state.as_json() for share, state in share_rows(shares, now)}
        return with_page_headers(JsonResponse({"shares": states}))
