"""Every way a sign-in through the provider is refused, and the page that
says so: a 4xx in the site's style, never a 500, and no session signed in."""

import logging

from django.conf import settings
from django.shortcuts import render
from django.utils.translation import gettext_lazy as _

from pages.security import with_page_headers

logger = logging.getLogger(__name__)


class SignInRefused(Exception):
    """`reason` is for the person signing in; `detail` goes to the log for the administrator."""

    status = 403
    title = _("Sign-in refused")

    def __init__(self, reason, *, detail: str = ""):
        super().__init__(str(reason))
        self.reason = reason
        self.detail = detail


class BadCallback(SignInRefused):
    """The answer that came back is not one to a sign-in this browser started."""

    status = 400
    title = _("This sign-in cannot go on")


class ConsentDenied(SignInRefused):
    """The provider (or the person at it) said no."""


class TokenRefused(SignInRefused):
    """The provider's ID token failed one of its checks."""


class AccountRefused(SignInRefused):
    """The identity is fine, but it may not sign in here."""


class ProviderUnavailable(SignInRefused):
    """The provider could not be reached or gave no usable answer. A 4xx
    like every sign-in refusal (424: this request depended on the provider's,
    which failed); the site itself is fine."""

    status = 424
    title = _("The sign-in service is not answering")


def refusal_page(request, refused: SignInRefused):
    logger.warning(
        "sign-in through the provider refused (%s): %s%s",
        type(refused).__name__,
        refused,
        f" ({refused.detail})" if refused.detail else "",
    )
    context = {"refused": refused, "provider_name": settings.OIDC_PROVIDER_NAME}
    return with_page_headers(render(request, "signin/oidc_refused.html", context, status=refused.status))
