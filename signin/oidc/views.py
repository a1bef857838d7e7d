"""The two ends of the authorization code flow: the start (a redirect to the
provider with state, nonce and a PKCE challenge, mozilla-django-oidc's) and
the callback (that state taken once, the code exchanged, the user signed in)."""

import re

from django.conf import settings
from django.contrib import auth
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import resolve_url
from django.utils.translation import gettext_lazy as _
from django.views import View
from mozilla_django_oidc.views import OIDCAuthenticationRequestView

from signin.oidc import discovery
from signin.oidc.backend import OIDCBackend
from signin.oidc.config import BACKEND, enabled, library_setting
from signin.oidc.refusals import BadCallback, ConsentDenied, SignInRefused, refusal_page

# An error code as OAuth 2.0 writes them (RFC 6749, 4.1.2.1); anything else
# in the URL is not repeated on the page (the URL is anyone's to write).
ERROR_CODE = re.compile(r"[a-z_]{1,64}")


class StartView(OIDCAuthenticationRequestView):
    get_settings = staticmethod(library_setting)

    def __init__(self, **kwargs):
        # The library's reads the endpoint from settings; ours is the discovery document's.
        View.__init__(self, **kwargs)

    def get(self, request):
        if not enabled():
            raise Http404
        try:
            self.OIDC_OP_AUTH_ENDPOINT = discovery.document()["authorization_endpoint"]
        except SignInRefused as refused:
            return refusal_page(request, refused)
        self.OIDC_RP_CLIENT_ID = settings.OIDC_CLIENT_ID
        return super().get(request)


class CallbackView(View):
    http_method_names = ["get"]

    def get(self, request):
        if not enabled():
            raise Http404
        try:
            user = self.signed_in(request)
        except SignInRefused as refused:
            return refusal_page(request, refused)
        auth.login(request, user, backend=BACKEND)
        next_url = request.session.pop("oidc_login_next", None)
        return HttpResponseRedirect(next_url or resolve_url(settings.LOGIN_REDIRECT_URL))

    def signed_in(self, request):
        states = request.session.get("oidc_states") or {}
        state = request.GET.get("state", "")
        # Taken out before anything else, so no answer can be replayed.
        started = states.pop(state, None) if state else None
        if started is not None:
            request.session["oidc_states"] = states
            request.session.save()
        error = request.GET.get("error")
        if error is not None:
            if started is None:
                raise BadCallback(NOT_STARTED, detail=f"error {error!r} with an unknown state")
            raise ConsentDenied(denial_reason(error), detail=f"error {error!r}")
        if started is None:
            raise BadCallback(NOT_STARTED, detail="unknown or missing state")
        if not request.GET.get("code"):
            raise BadCallback(NOT_STARTED, detail="no code")
        return OIDCBackend().sign_in(request, nonce=started["nonce"], code_verifier=started.get("code_verifier"))


NOT_STARTED = _("This sign-in was not started in this browser, or it has been used already. Start again.")


def denial_reason(error: str):
    if error == "access_denied":
        return _("The sign-in was declined at the sign-in service.")
    code = error if ERROR_CODE.fullmatch(error) else "invalid"
    return _("The sign-in service refused the sign-in (%(code)s).") % {"code": code}
