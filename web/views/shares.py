"""Sharing a file or several, and watching, extending, shortening or ending a share.

Every write is a model method (Share.create_for, set_expiry, unshare,
reactivate): the
conditional UPDATEs stay the only writers, and the API and these pages obey
one set of rules.
"""

from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views import View
from django.views.generic import FormView, TemplateView

from pages.qr import qr_svg
from pages.security import PageHeadersMixin, with_page_headers
from sharing.models import MAX_FILES_PER_SHARE, EndState, ReactivationRefused, Share, StoredFile, reactivate
from web.forms import ExpiryForm, ReactivateForm, ShareForm
from web.history import HISTORY_LINES, history
from web.presenters import share_state


class OwnerFormView(LoginRequiredMixin, PageHeadersMixin, FormView):
    def form_invalid(self, form):
        # A 400, so a script (or a test) sees the refusal; a person sees the errors.
        response = super().form_invalid(form)
        response.status_code = 400
        return response


class ShareCreateView(OwnerFormView):
    """The share dialog: how long the link lives, its limit and password;
    for one file (files/<pk>/share/) or the files chosen on the dashboard
    (files/share/?files=<pk>&files=<pk>...)."""

    template_name = "web/share_form.html"
    form_class = ShareForm

    def dispatch(self, request, *args, **kwargs):
        if request.user.is_authenticated:
            self.files = self.chosen_files(request, kwargs.get("pk"))
            if not self.files:
                messages.error(request, _("Choose at least one file to share."))
                return redirect(reverse("web:dashboard") + "#files")
        return super().dispatch(request, *args, **kwargs)

    @staticmethod
    def chosen_files(request, pk) -> list[StoredFile]:
        """The owner's files to share, in the order chosen; another user's
        file or one that does not exist is a 404, the same as everywhere."""
        if pk is not None:
            return [get_object_or_404(StoredFile, pk=pk, owner=request.user)]
        ids = list(dict.fromkeys(request.GET.getlist("files")))[:MAX_FILES_PER_SHARE]
        if not all(value.isascii() and value.isdigit() and len(value) < 19 for value in ids):
            raise Http404
        found = StoredFile.objects.filter(owner=request.user).in_bulk([int(value) for value in ids])
        if len(found) != len(ids):
            raise Http404
        return [found[int(value)] for value in ids]

    def get_context_data(self, **kwargs):
        return super().get_context_data(files=self.files, **kwargs)

    def form_valid(self, form):
        data = form.cleaned_data
        try:
            share = Share.create_for(
                files=self.files,
                expires_at=data["deadline"],
                max_downloads=data.get("max_downloads"),
                password=data.get("password") or "",
                notify_first_download=data["notify_first_download"],
                remind_before_expiry=data["remind_before_expiry"],
                message=data["message"],
            )
        except ValidationError:
            # The deadline passed while waiting for the write lock.
            form.add_error(None, _("That time passed before the link could be made; pick a later one."))
            return self.form_invalid(form)
        messages.success(self.request, _("Your link is ready. Copy it and send it to anyone."))
        return redirect("web:share", pk=share.pk)


def owned_share(request, pk) -> Share:
    # Another user's share is a 404, the same as a missing one.
    return get_object_or_404(Share.objects.prefetch_related("items__file"), pk=pk, owner=request.user)


class ShareDetailView(LoginRequiredMixin, PageHeadersMixin, TemplateView):
    """One share: its link with Copy and a QR code, its state, and what can
    be done with it."""

    template_name = "web/share_detail.html"

    def get_context_data(self, *, expiry_form=None, reactivate_form=None, **kwargs):
        share = owned_share(self.request, self.kwargs["pk"])
        url = self.request.build_absolute_uri(reverse("public-share", args=[share.token]))
        now = timezone.now()
        state = share_state(share, now)
        fate = share.fate(now)
        return super().get_context_data(
            share=share,
            state=state,
            link=url,
            qr=qr_svg(url, label=_("QR code of the link")),
            expiry_form=expiry_form or ExpiryForm(like=share.expires_at - share.created_at),
            # An ended link whose file is still there may be brought back.
            reactivable=not fate.live and fate.state != EndState.FILE_DELETED,
            reactivate_form=reactivate_form or reactivate_form_for(share, fate.state),
            history=history(share),
            history_limit=HISTORY_LINES,
            **kwargs,
        )


class ShareExpiryView(LoginRequiredMixin, View):
    """POST: move a live share's deadline (extend or shorten it)."""

    http_method_names = ["post"]

    def post(self, request, pk):
        share = owned_share(request, pk)
        form = ExpiryForm(request.POST)
        if not form.is_valid():
            return self.detail_again(request, pk, form, 400)
        if share.set_expiry(form.cleaned_data["deadline"]):
            messages.success(request, _("The link now expires at the new time."))
            return redirect("web:share", pk=pk)
        if share.is_servable():
            messages.error(request, _("The new time passed before it could be saved; nothing was changed."))
        else:
            messages.error(request, _("This link has already ended; only a live link can be changed."))
        return self.detail_again(request, pk, form, 409)

    def detail_again(self, request, pk, form, status):
        return detail_again(request, pk, status, expiry_form=form)


def detail_again(request, pk, status, **forms):
    """The share page again, with a refused form's errors, and its status."""
    detail = ShareDetailView()
    detail.setup(request, pk=pk)
    response = detail.get(request, **forms)
    response.status_code = status
    return with_page_headers(response)


def former_lifetime(share: Share):
    return share.expires_at - share.created_at


def reactivate_form_for(share: Share, state: EndState, data=None) -> ReactivateForm:
    """Offered first: the shortest preset that lasts as long as the link
    did; downloads from zero when the link ended by its limit (without it,
    reactivation is refused)."""
    form = ReactivateForm(data, like=former_lifetime(share))
    form.fields["reset_downloads"].initial = state == EndState.DOWNLOAD_LIMIT
    return form


# What an owner reads when reactivation is refused (ReactivationRefused.code).
REFUSALS = {
    "past": gettext_lazy("That time passed before the link could be reactivated; pick a later one."),
    "file_deleted": gettext_lazy("Its file was deleted: this link cannot work again."),
    "active": gettext_lazy("This link is still active: change its expiry instead."),
    "used_up": gettext_lazy("Its downloads are used up: tick “Count downloads from zero again” to reactivate it."),
}


class ReactivateView(LoginRequiredMixin, View):
    """POST: bring an ended link back at the same address, through the same
    model method as the API's reactivate. From the dashboard's button (no
    lifetime sent) it comes back for the lifetime it had, with its
    downloads counted from zero; the share page's form says both."""

    http_method_names = ["post"]

    def post(self, request, pk):
        share = owned_share(request, pk)
        data = request.POST.copy()
        one_click = "lifetime" not in data
        if one_click:
            data["lifetime"] = ReactivateForm(like=former_lifetime(share)).fields["lifetime"].initial
            data["reset_downloads"] = "on"
        form = reactivate_form_for(share, share.fate().state, data)
        if not form.is_valid():
            return detail_again(request, pk, 400, reactivate_form=form)
        try:
            reactivate(share, form.cleaned_data["deadline"], reset_downloads=form.cleaned_data["reset_downloads"])
        except ReactivationRefused as refused:
            messages.error(request, str(REFUSALS.get(refused.code, refused.message)))
            return detail_again(request, pk, 409, reactivate_form=form)
        messages.success(request, _("The link works again, at the same address."))
        return back_or_share(request, pk)


class UnshareView(LoginRequiredMixin, View):
    """POST: end a share now. Goes back to the page it came from."""

    http_method_names = ["post"]

    def post(self, request, pk):
        share = owned_share(request, pk)
        if share.unshare():
            messages.success(request, _("The link has been unshared; it no longer works."))
        else:
            messages.info(request, _("This link had already ended."))
        return back_or_share(request, pk)


def back_or_share(request, pk):
    """Back to the page the form came from (its `next`), else the share's page."""
    back = request.POST.get("next", "")
    if url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return redirect(back)
    return redirect("web:share", pk=pk)
