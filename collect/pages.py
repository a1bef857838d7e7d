"""The page of an upload request, for the person who holds its link.

GET shows what is asked (title, the owner's note, the limits, the
deadline) and the upload form: resumable uploads through the request's tus
endpoints with JavaScript, one multipart POST without. A request with a
password shows its password form first (POST password=...); an ended one
says so (410), and a full one says so instead of offering the form. Every
answer is decided by the request's rules at the time of the request,
whatever the daemon has done yet.
"""

from django.conf import settings
from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views import View

from collect.guards import request_allowed
from collect.models import UploadRequest
from collect.places import RequestEnded, RequestFull
from collect.receiving import receive_posted_file
from collect.unlock import give_unlock, may_upload
from links.answers import answer
from links.guards import check_password
from pages.forms import UploadForm
from pages.owners import owner_shown
from pages.security import PageHeadersMixin
from ratelimit.tries import tries_left_in_words
from ratelimit.waits import wait_in_words
from sharing.models import QuotaExceeded
from uploads.writing import page_chunk


class RequestPage(PageHeadersMixin, View):
    http_method_names = ["get", "head", "post"]

    def dispatch(self, request, *args, **kwargs):
        # Counted with its upload endpoints (collect.guards), before the lookup.
        decision = request_allowed(request)
        if not decision.allowed:
            return answer(request, "rate_limited", retry_after=decision.retry_after)
        self.token = kwargs["token"]
        self.upload_request = UploadRequest.objects.select_related("owner").filter(token=self.token).first()
        return super().dispatch(request, *args, **kwargs)

    def get(self, request, token, **context):
        found = self.upload_request
        if found is None:
            raise Http404("No such upload request.")
        if not found.is_open(timezone.now()):
            return render(request, "collect/ended.html", {"upload_request": found}, status=410)
        if not may_upload(request, found):
            return self.locked(request, status=context.pop("status", 200), **context)
        return self.page(request, status=context.pop("status", 200), **context)

    def post(self, request, token):
        if "password" in request.POST:
            return self.unlock(request)
        found = self.upload_request
        if found is None or not found.is_open(timezone.now()) or not may_upload(request, found):
            return self.get(request, token)
        form = UploadForm(request.POST, request.FILES)
        if not form.is_valid():
            return self.page(request, status=413 if form.too_large else 400, upload_form=form)
        names = []
        for uploaded in form.cleaned_data["files"]:
            try:
                names.append(receive_posted_file(found, uploaded).name)
            except RequestEnded:
                return self.get(request, token)
            except RequestFull as full:
                return self.refused(request, form, names, uploaded, full.message)
            except QuotaExceeded:
                return self.refused(request, form, names, uploaded, _("The owner has no room left for it."))
        messages.success(request, _("Sent %(names)s.") % {"names": ", ".join(names)})
        response = redirect("collect:page", token=token)
        response.status_code = 303
        return response

    def unlock(self, request):
        check = check_password(request, self.upload_request, self.token, request.POST["password"])
        if check.outcome == "rate_limited":
            response = self.locked(request, status=429, limited=True, wait=wait_in_words(check.retry_after))
            response["Retry-After"] = str(check.retry_after)
            return response
        if check.outcome == "wrong":
            if self.upload_request is None:
                raise Http404("No such upload request.")
            return self.locked(
                request, status=403, password_error=True, tries_left=tries_left_in_words(check.tries_left)
            )
        response = redirect("collect:page", token=self.token)
        response.status_code = 303
        give_unlock(response, self.upload_request)
        return response

    def refused(self, request, form, names, uploaded, reason: str):
        """A 413 naming the file that was not kept (those before it were)."""
        if names:
            messages.success(request, _("Sent %(names)s.") % {"names": ", ".join(names)})
        form.add_error("files", _("%(name)s was not sent. %(reason)s") % {"name": uploaded.name, "reason": reason})
        return self.page(request, status=413, upload_form=form)

    def locked(self, request, *, status: int, **context):
        context = {
            "upload_request": self.upload_request,
            "owner_name": owner_shown(self.upload_request.owner) if self.upload_request else "",
            **context,
        }
        return render(request, "collect/locked.html", context, status=status)

    def page(self, request, *, status: int, **context):
        found = self.upload_request
        context = {
            "upload_request": found,
            "owner_name": owner_shown(found.owner),
            # Full before the uploader chooses anything: no form to choose with.
            "full": found.is_full(),
            "upload_action": reverse("collect:page", args=[found.token]),
            "tus_endpoint": reverse("collect:tus-uploads", args=[found.token]),
            "tus_chunk_bytes": page_chunk(),
            "max_upload_bytes": settings.MAX_UPLOAD_BYTES,
            "upload_form": context.pop("upload_form", None),
            **context,
        }
        return render(request, "collect/request.html", context, status=status)
