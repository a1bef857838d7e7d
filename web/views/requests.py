"""The owner's upload requests: the list (with what arrived through each)
and the form that makes one, closing one, and deleting one.

Every write is collect's (UploadRequest.create_for, close_request,
delete_request); whether a
request is open is its own is_open, asked once per page at one clock.
"""

from dataclasses import dataclass
from datetime import datetime

from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.core.paginator import Paginator
from django.db.models import Prefetch
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, pgettext
from django.views import View
from django.views.generic import TemplateView

from collect.ending import close_request, delete_request
from collect.models import ReceivedFile, UploadRequest
from collect.unlock import request_path
from pages.security import PageHeadersMixin
from pages.units import file_size, moment
from web.forms import UploadRequestForm
from web.views.dashboard import PAGE_SIZE
from web.views.shares import OwnerFormView

# What an owner reads for each way a request ends (UploadRequest.EndReason).
ENDINGS = {
    UploadRequest.EndReason.EXPIRED: gettext_lazy("Ended at its deadline"),
    UploadRequest.EndReason.CLOSED: gettext_lazy("Closed by you"),
}


@dataclass(frozen=True)
class RequestRow:
    request: UploadRequest
    link: str
    open: bool
    ended: str
    ended_at: datetime | None

    @property
    def full(self) -> bool:
        """Open, but with no place left (UploadRequest.is_full)."""
        return self.open and self.request.is_full()

    @property
    def state(self) -> str:
        """The word of its Status cell: Open, Full, or how it ended."""
        if not self.open:
            return self.ended
        if self.full:
            return pgettext("an upload request with no place left", "Full")
        return pgettext("an upload request that takes files", "Open")

    @property
    def files(self) -> str:
        taken, limit = self.request.files_taken, self.request.max_files
        if limit is None:
            return _("%(taken)s (no limit)") % {"taken": taken}
        return _("%(taken)s of %(limit)s") % {"taken": taken, "limit": limit}

    @property
    def size(self) -> str:
        taken, limit = self.request.bytes_taken, self.request.max_bytes
        if limit is None:
            return _("%(taken)s (no limit)") % {"taken": file_size(taken)}
        return _("%(taken)s of %(limit)s") % {"taken": file_size(taken), "limit": file_size(limit)}

    def as_json(self) -> dict:
        """What the page's poll (requests_live.js) writes into the row."""
        return {
            "id": self.request.pk,
            "open": self.open,
            "full": self.full,
            "state": self.state,
            "ended_at": self.ended_at.isoformat() if self.ended_at else None,
            "ended_at_utc": moment(self.ended_at) if self.ended_at else None,
            "files": self.files,
            "bytes": self.size,
        }


def request_row(http_request, upload_request: UploadRequest, now: datetime) -> RequestRow:
    link = http_request.build_absolute_uri(request_path(upload_request))
    ending = upload_request.how_it_ended(now)
    if ending is None:
        return RequestRow(upload_request, link, True, "", None)
    reason, moment = ending
    return RequestRow(upload_request, link, False, str(ENDINGS[reason]), moment)


def owned_request(request, pk) -> UploadRequest:
    # Another user's request is a 404, the same as a missing one.
    return get_object_or_404(UploadRequest, pk=pk, owner=request.user)


class RequestsView(OwnerFormView):
    """GET: the owner's requests, newest first, and the form; POST makes one."""

    template_name = "web/requests.html"
    form_class = UploadRequestForm

    def get_context_data(self, **kwargs):
        now = timezone.now()  # one clock for the whole page
        arrivals = Prefetch(
            "received", queryset=ReceivedFile.objects.select_related("file").order_by("started_at", "pk")
        )
        requests = UploadRequest.objects.filter(owner=self.request.user).prefetch_related(arrivals)
        page = Paginator(requests, PAGE_SIZE).get_page(self.request.GET.get("page"))
        rows = [request_row(self.request, upload_request, now) for upload_request in page]
        return super().get_context_data(request_page=page, rows=rows, **kwargs)

    def form_valid(self, form):
        data = form.cleaned_data
        upload_request = UploadRequest.create_for(
            owner=self.request.user,
            expires_at=data["deadline"],
            title=data["title"],
            note=data["note"],
            max_files=data["max_files"],
            max_bytes=data["max_bytes"],
            notify_by_email=data["notify_by_email"],
            password=data["password"],
        )
        link = self.request.build_absolute_uri(request_path(upload_request))
        messages.success(self.request, _("Your upload request is ready. Send this link: %(link)s") % {"link": link})
        return redirect("web:requests")


class RequestPlacesView(LoginRequiredMixin, View):
    """GET ?id=...&id=...: the state and places taken of the owner's requests
    with those ids (the ones a page shows), as JSON, for the page's poll.
    Ids of other users' requests, or of none, are left out."""

    http_method_names = ["get"]

    def get(self, request):
        try:
            ids = [int(value) for value in request.GET.getlist("id")]
        except ValueError:
            return JsonResponse({"detail": "Each id must be a whole number."}, status=400)
        if len(ids) > PAGE_SIZE:
            return JsonResponse({"detail": f"At most {PAGE_SIZE} ids at once (a page of requests)."}, status=400)
        now = timezone.now()
        found = UploadRequest.objects.filter(owner=request.user, pk__in=ids)
        rows = [request_row(request, upload_request, now).as_json() for upload_request in found]
        response = JsonResponse({"requests": rows})
        response["Cache-Control"] = "no-store"
        return response


class RequestCloseView(LoginRequiredMixin, View):
    """POST: the request takes no more files from now on."""

    http_method_names = ["post"]

    def post(self, request, pk):
        upload_request = owned_request(request, pk)
        if close_request(upload_request):
            messages.success(request, _("The upload request is closed; its link takes no more files."))
        else:
            messages.info(request, _("This upload request had already ended."))
        return redirect("web:requests")


class RequestDeleteView(LoginRequiredMixin, PageHeadersMixin, TemplateView):
    """GET asks for confirmation; POST closes the request, then deletes it
    (the files that arrived through it stay the owner's)."""

    template_name = "web/request_delete.html"

    def get_context_data(self, **kwargs):
        upload_request = owned_request(self.request, self.kwargs["pk"])
        arrived = sum(received.arrived for received in upload_request.received.all())
        return super().get_context_data(upload_request=upload_request, arrived=arrived, **kwargs)

    def post(self, request, pk):
        delete_request(owned_request(request, pk))
        messages.success(request, _("Deleted the upload request; the files that arrived through it stay yours."))
        return redirect("web:requests")
