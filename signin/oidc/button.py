"""The "Sign in with <name>" button of the sign-in page: a link, not a form
(the page's form-action 'self' would stop a form's redirect to the provider)."""

from urllib.parse import urlencode

from django.conf import settings
from django.urls import reverse

from signin.oidc.config import enabled


def sign_in_button(request) -> dict | None:
    """The button's name and link, carrying the page's ?next=; None while the provider is off."""
    if not enabled():
        return None
    url = reverse("signin-oidc:start")
    next_url = request.GET.get("next")
    if next_url:
        url += "?" + urlencode({"next": next_url})
    return {"name": settings.OIDC_PROVIDER_NAME, "url": url}
