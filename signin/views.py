"""The second factor's pages: the code after the password, and setting up
an authenticator app. Thin: the rules are in signin/totp.py,
signin/recovery.py and signin/second_factor.py."""

from django.contrib.auth.mixins import LoginRequiredMixin
from django.shortcuts import redirect, resolve_url
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.generic import FormView

from pages.qr import qr_svg
from pages.security import PageHeadersMixin
from ratelimit.logins import LoginRefused, attempt_succeeded, begin_attempt
from signin import second_factor, totp
from signin.forms import CodeForm, SetUpForm

NEW_SECRET = "signin.new_secret"  # the secret being set up, kept in the session until its first code


def next_url(request) -> str:
    """Where the page was asked to go on to (its `next`), else the dashboard."""
    wanted = request.POST.get("next") or request.GET.get("next") or ""
    if url_has_allowed_host_and_scheme(wanted, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return wanted
    return resolve_url("web:dashboard")


class CodeView(LoginRequiredMixin, PageHeadersMixin, FormView):
    """The code after the password, for a session that owes one."""

    template_name = "signin/code.html"
    form_class = CodeForm

    def dispatch(self, request, *args, **kwargs):
        if request.user.is_authenticated and second_factor.waiting(request) != "code":
            return redirect(next_url(request))
        return super().dispatch(request, *args, **kwargs)

    def get_context_data(self, **kwargs):
        return super().get_context_data(next=next_url(self.request), **kwargs)

    def post(self, request, *args, **kwargs):
        # Counted before the code is looked at, with the password's limits:
        # a wrong code is a failed log-in of the account.
        try:
            self.attempt = begin_attempt(request, request.user.get_username())
        except LoginRefused as refused:
            form = self.get_form()
            form.is_valid()
            form.add_error(None, refused.sentence())
            response = self.render_to_response(self.get_context_data(form=form), status=refused.status)
            response["Retry-After"] = str(refused.retry_after)
            return response
        return super().post(request, *args, **kwargs)

    def form_valid(self, form):
        user, code = self.request.user, form.cleaned_data["code"]
        if not second_factor.code_accepted(user, code):
            form.add_error("code", _("That code is not right, or it was used already."))
            return self.form_invalid(form)
        attempt_succeeded(self.request, user.get_username())
        second_factor.given(self.request)
        return redirect(next_url(self.request))

    def form_invalid(self, form):
        attempt = getattr(self, "attempt", None)
        if attempt is not None:
            form.add_error(None, attempt.tries_left_in_words())
        return self.render_to_response(self.get_context_data(form=form), status=400)


class SetUpView(LoginRequiredMixin, PageHeadersMixin, FormView):
    """Set up an authenticator app (again: a new one replaces the old), or
    turn it off (a POST with turn_off; not for staff who must have one)."""

    template_name = "signin/set_up.html"
    form_class = SetUpForm

    def secret(self) -> str:
        session = self.request.session
        if NEW_SECRET not in session:
            session[NEW_SECRET] = totp.new_secret()
        return session[NEW_SECRET]

    def get_context_data(self, **kwargs):
        user, secret = self.request.user, self.secret()
        return super().get_context_data(
            qr=qr_svg(totp.setup_uri(secret, user.get_username()), label=_("QR code to set up an authenticator app")),
            secret=" ".join(secret[i : i + 4] for i in range(0, len(secret), 4)),
            has_device=totp.has_device(user),
            may_turn_off=not second_factor.required_without_device(user),
            required=second_factor.waiting(self.request) == "set_up",
            next=next_url(self.request),
            **kwargs,
        )

    def post(self, request, *args, **kwargs):
        if "turn_off" not in request.POST:
            return super().post(request, *args, **kwargs)
        if second_factor.required_without_device(request.user):
            refusal = _("Staff accounts here must keep a second factor.")
            return self.render_to_response(self.get_context_data(refusal=refusal), status=403)
        totp.turn_off(request.user)
        return redirect("signin:set-up")

    def form_valid(self, form):
        codes = totp.set_up(self.request.user, self.secret(), form.cleaned_data["code"])
        if codes is None:
            form.add_error("code", _("That code is not right: check the app's clock, or scan the QR code again."))
            return self.form_invalid(form)
        del self.request.session[NEW_SECRET]
        second_factor.given(self.request)
        context = {"codes": codes, "next": next_url(self.request)}
        return self.response_class(self.request, "signin/recovery_codes.html", context, using=self.template_engine)

    def form_invalid(self, form):
        return self.render_to_response(self.get_context_data(form=form), status=400)
