"""Sign-in, sign-out and password change: Django's own views, in the pages'
style, with the same guessing limits as the admin and the API."""

from django.contrib.auth import views as auth_views
from django.core.exceptions import ValidationError
from django.urls import reverse_lazy

from ratelimit.logins import LoginRefused, attempt_succeeded, begin_attempt
from web.security import PageHeadersMixin


class LoginView(PageHeadersMixin, auth_views.LoginView):
    template_name = "web/login.html"
    redirect_authenticated_user = True

    def post(self, request, *args, **kwargs):
        # Counted before the password is hashed, so a refused guess costs nothing.
        self.username = request.POST.get("username", "")
        try:
            begin_attempt(request, self.username)
        except LoginRefused as refused:
            return self.refused(refused)
        return super().post(request, *args, **kwargs)

    def form_valid(self, form):
        attempt_succeeded(self.request, self.username)
        return super().form_valid(form)

    def refused(self, refused: LoginRefused):
        """The form again, the refusal as its error, with the refusal's status."""

        class RefusedForm(self.get_form_class()):
            def clean(self):
                # Never authenticate: the point is not to hash.
                raise ValidationError(refused.sentence(), code="throttled")

        form = RefusedForm(self.request, data=self.request.POST)
        response = self.render_to_response(self.get_context_data(form=form), status=refused.status)
        response["Retry-After"] = str(refused.retry_after)
        return response


class LogoutView(PageHeadersMixin, auth_views.LogoutView):
    next_page = reverse_lazy("web:login")


class PasswordChangeView(PageHeadersMixin, auth_views.PasswordChangeView):
    template_name = "web/password_change.html"
    success_url = reverse_lazy("web:password-change-done")


class PasswordChangeDoneView(PageHeadersMixin, auth_views.PasswordChangeDoneView):
    template_name = "web/password_change_done.html"
