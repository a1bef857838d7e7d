"""The dashboard: the owner's links first (a view, a search, pages of
PAGE_SIZE), then the upload form and the files, and the small JSON answer
that keeps the links' rows live and brings in links made elsewhere."""

from django.conf import settings
from django.contrib.auth.mixins import LoginRequiredMixin
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import JsonResponse
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.views import View
from django.views.generic import TemplateView

from pages.forms import UploadForm
from pages.security import PageHeadersMixin, with_page_headers
from sharing.models import Share, StoredFile
from sharing.models.state import servable_q
from uploads.writing import page_chunk
from web.link_search import ACTIVE, VIEWS, LinkSearch
from web.presenters import share_rows
from web.storage import storage_of

# Ten links and ten files a page: with 200 links the page at 1280 px stays
# about two screens tall (tests/browser/test_dashboard_browser.py measures it).
PAGE_SIZE = 10
LIVE_IDS_MAX = 200  # more than any page shows


def files_with_live_links(user, now):
    live = servable_q(now, prefix="share_items__share__")
    files = StoredFile.objects.filter(owner=user).annotate(live_links=Count("share_items", filter=live))
    return files.order_by("-created_at", "-id")  # a GROUP BY drops Meta.ordering


class DashboardView(LoginRequiredMixin, PageHeadersMixin, TemplateView):
    template_name = "web/dashboard.html"

    def get(self, request, *args, **kwargs):
        context = self.get_context_data(**kwargs)
        # A view or search the page cannot list (an unknown view, a query
        # too long) is named under the search box, over the Active view.
        return self.render_to_response(context, status=400 if context["search"].errors else 200)

    def get_context_data(self, *, upload_form=None, **kwargs):
        request, now = self.request, timezone.now()  # one clock for the whole page
        search = LinkSearch(request.GET)
        shares = search.shares(Share.objects.filter(owner=request.user), now)
        shares = shares.prefetch_related("items__file").with_pending_downloads()
        share_page = Paginator(shares, PAGE_SIZE).get_page(request.GET.get("page"))
        newest = Share.objects.filter(owner=request.user).order_by("-pk").values_list("pk", flat=True).first()
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
            search=search,
            status=search.view,
            tabs=VIEWS,
            # New links made elsewhere join the first page of the Active view
            # without a search: they belong at its top (live.js asks for them).
            takes_new=search.view == ACTIVE and not search.query and share_page.number == 1,
            newest_id=newest or 0,
            files_open="files_page" in request.GET,
            file_count=file_page.paginator.count,
            **kwargs,
        )


class LiveSharesView(LoginRequiredMixin, View):
    """GET ?ids=1,2,3: the current state of those of the owner's shares, as
    the dashboard's script shows it. Another user's id is simply absent.

    With &after=<id> (the newest share the page knew of), also the rows of
    the owner's active shares made since, newest first, rendered as the page
    renders them: links made through the API or in another tab.
    """

    def get(self, request):
        wanted, after = ids_of(request.GET.get("ids", "")), request.GET.get("after")
        if wanted is None or (after is not None and not is_id(after)):
            detail = f"Give 0 to {LIVE_IDS_MAX} share ids as ?ids=1,2,3, and optionally &after=<share id>."
            return with_page_headers(JsonResponse({"detail": detail}, status=400))
        if not wanted and after is None:
            return with_page_headers(
                JsonResponse({"detail": "Give share ids as ?ids=1,2,3 or &after=<share id>."}, status=400)
            )
        now = timezone.now()
        mine = Share.objects.filter(owner=request.user)
        shares = mine.filter(pk__in=wanted).with_pending_downloads()
        answer = {"shares": {share.pk: state.as_json() for share, state in share_rows(shares, now)}}
        if after is not None:
            made = mine.filter(pk__gt=int(after)).with_effective_status(Share.Status.ACTIVE, now)
            made = made.prefetch_related("items__file").with_pending_downloads().order_by("-pk")[:PAGE_SIZE]
            answer["new"] = [new_row(request, share, state) for share, state in share_rows(made, now)]
        return with_page_headers(JsonResponse(answer))


def is_id(part: str) -> bool:
    return part.isascii() and part.isdigit() and len(part) < 19


def ids_of(text: str) -> list[int] | None:
    """The ids in "1,2,3" ([] for none), or None if any part is not an id or there are too many."""
    parts = [part.strip() for part in text.split(",")] if text.strip() else []
    if not all(is_id(part) for part in parts) or len(parts) > LIVE_IDS_MAX:
        return None
    return [int(part) for part in parts]


def new_row(request, share, state) -> dict:
    # Its forms come back to the dashboard, not to this JSON address.
    html = render_to_string(
        "web/_share_row.html", {"share": share, "state": state, "next_path": reverse("web:dashboard")}, request=request
    )
    return {"id": share.pk, "html": html}
