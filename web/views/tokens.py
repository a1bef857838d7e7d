"""The owner's API tokens in the web app: each with a name and, if asked,
an expiry; a new one's key is shown once, in the answer that made it; any
one can be revoked. POST /api/auth/token/ adds tokens to the same list."""

import re
from datetime import timedelta

from django import forms
from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.shortcuts import redirect
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.generic import TemplateView

from pages.security import PageHeadersMixin
from tokens import service
from tokens.models import NAME_MAX, ApiToken

# An id the database can hold (a bigint), else a 400 rather than its overflow.
TOKEN_ID = re.compile(r"[0-9]{1,18}")
LIFETIMES = [
    ("", gettext_lazy("Never")),
    ("7", gettext_lazy("In 7 days")),
    ("30", gettext_lazy("In 30 days")),
    ("90", gettext_lazy("In 90 days")),
    ("365", gettext_lazy("In a year")),
]


class NewTokenForm(forms.Form):
    name = forms.CharField(label=gettext_lazy("Name"), max_length=NAME_MAX, strip=True)
    expires_in_days = forms.TypedChoiceField(
        label=gettext_lazy("Expiry"), choices=LIFETIMES, coerce=int, empty_value=None, required=False
    )

    def expires_at(self, now):
        days = self.cleaned_data["expires_in_days"]
        return None if days is None else now + timedelta(days=days)


class TokenView(LoginRequiredMixin, PageHeadersMixin, TemplateView):
    template_name = "web/token.html"

    def get_context_data(self, **kwargs):
        kwargs.setdefault("form", NewTokenForm())
        kwargs["tokens"] = ApiToken.objects.filter(user=self.request.user)
        kwargs["now"] = timezone.now()
        return super().get_context_data(**kwargs)

    def post(self, request, *args, **kwargs):
        if request.POST.get("action") == "revoke":
            return self.revoke(request)
        form = NewTokenForm(request.POST)
        if not form.is_valid():
            return self.render_to_response(self.get_context_data(form=form), status=400)
        try:
            token, key = service.issue(
                request.user, name=form.cleaned_data["name"], expires_at=form.expires_at(timezone.now())
            )
        except service.TooManyTokens as full:
            form.add_error(
                None, _("You hold %(limit)d tokens, the most allowed: revoke one first.") % {"limit": full.limit}
            )
            return self.render_to_response(self.get_context_data(form=form), status=409)
        # The key is in this answer only: never stored where a page could show it again.
        return self.render_to_response(self.get_context_data(new_token=token, new_key=key), status=201)

    def revoke(self, request):
        token_id = request.POST.get("token", "")
        if not TOKEN_ID.fullmatch(token_id):
            return self.refused(_("Say which token to revoke."), status=400)
        if not service.revoke(request.user, int(token_id)):
            return self.refused(_("No such token among yours: nothing was revoked."), status=404)
        messages.success(request, _("The token was revoked: it no longer works."))
        return redirect("web:token")

    def refused(self, message: str, *, status: int):
        return self.render_to_response(self.get_context_data(refusal=message), status=status)
