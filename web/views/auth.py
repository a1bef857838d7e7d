"""Sign-in, sign-out and password change: Django's own views, in the pages'
style, with the same guessing limits as the admin and the API (the password
change's old password included)."""

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.core.exceptions import ValidationError
from django.urls import reverse_lazy

from pages.security import PageHeadersMixin
from ratelimit.logins import LoginRefused, attempt_succeeded, begin_attempt
from signin.oidc.button import sign_in_button
from signin.oidc.logout import provider_sign_out_url, signed_out_page


class ThrottledPasswordMixin:
    """Count a form's password attempt (ratelimit.logins) before the password
    is hashed, take it back when the form is valid, tell a failed one how
    many tries are left, and answer a refused one with the form and the
    refusal as its error."""

    attempt = None  # the counted attempt of this request (ratelimit.logins.Attempt)

    def attempt_username(self) -> str:
        raise NotImplementedError

    def post(self, request, *args, **kwargs):
        # Counted before the password is hashed, so a refused guess costs nothing.
        try:
            self.attempt = begin_attempt(request, self.attempt_username())
        except LoginRefused as refused:
            return self.refused(refused)
        return super().post(request, *args, **kwargs)

    def form_valid(self, form):
        attempt_succeeded(self.request, self.attempt_username())
        return super().form_valid(form)

    def form_invalid(self, form):
        if self.attempt is not None:
            form.add_error(None, self.attempt.tries_left_in_words())
        return super().form_invalid(form)

    def refused(self, refused: LoginRefused):
        """The form again, the refusal as its error, with the refusal's status."""

        class RefusedForm(self.get_form_class()):
            def clean_old_password(self):
                return ""  # never hash: the point is not to

            def clean(self):
                raise ValidationError(refused.sentence(), code="throttled")

        kwargs = self.get_form_kwargs()
        form = RefusedForm(**kwargs)
        response = self.render_to_response(self.get_context_data(form=form), status=refused.status)
        response["Retry-After"] = str(refused.retry_after)
        return response


class LoginView(ThrottledPasswordMixin, PageHeadersMixin, auth_views.LoginView):
    template_name = "web/login.html"
    redirect_authenticated_user = True

    def attempt_username(self) -> str:
        return self.request.POST.get("username", "")

    def post(self, request, *args, **kwargs):
        # LOCAL_LOGIN off: no password here (/admin/login/ keeps its own).
        if not settings.LOCAL_LOGIN:
            return self.render_to_response(self.get_context_data(password_refused=True), status=403)
        return super().post(request, *args, **kwargs)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        return {**context, "oidc_button": sign_in_button(self.request), "local_login": settings.LOCAL_LOGIN}


class LogoutView(PageHeadersMixin, auth_views.LogoutView):
    next_page = reverse_lazy("web:login")

    def post(self, request, *args, **kwargs):
        # Read before the local session ends: the provider's sign-out needs its ID token.
        provider_url = provider_sign_out_url(request)
        response = super().post(request, *args, **kwargs)
        return signed_out_page(request, provider_url) if provider_url else response


class PasswordChangeView(ThrottledPasswordMixin, PageHeadersMixin, auth_views.PasswordChangeView):
    """Wrong old passwords count as failed log-ins of the account (someone at
    an open session guessing it), under the same limits."""

    template_name = "web/password_change.html"
    success_url = reverse_lazy("web:password-change-done")

    def attempt_username(self) -> str:
        return self.request.user.get_username()


class PasswordChangeDoneView(PageHeadersMixin, auth_views.PasswordChangeDoneView):
    template_name = "web/password_change_done.html"
