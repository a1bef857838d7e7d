"""The owner's API token in the web app: create it (shown once, in the
answer that made it), see when it was made, revoke it. The API's own
POST /api/auth/token/ hands out the same token."""

from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.views.generic import TemplateView
from rest_framework.authtoken.models import Token

from api.authentication import issue_token, revoke_tokens
from pages.security import PageHeadersMixin


class TokenView(LoginRequiredMixin, PageHeadersMixin, TemplateView):
    template_name = "web/token.html"

    def get_context_data(self, **kwargs):
        kwargs.setdefault("token", Token.objects.filter(user=self.request.user).first())
        return super().get_context_data(**kwargs)

    def post(self, request, *args, **kwargs):
        if request.POST.get("action") == "revoke":
            revoke_tokens(request.user)
            messages.success(request, _("Your API token was revoked: it no longer works."))
            return redirect("web:token")
        token = issue_token(request.user)  # replaces the old one, which stops working
        # The key is in this answer only: never stored where a page could show it again.
        return self.render_to_response(self.get_context_data(token=token, new_key=token.key), status=201)
