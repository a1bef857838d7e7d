"""Signing out of the provider too (OpenID Connect RP-Initiated Logout 1.0),
when its discovery document has an end_session_endpoint.

The local session ends first; then a page of ours links to the provider's
sign-out. Not a redirect: the pages' Content-Security-Policy (form-action
'self') would stop the sign-out form's redirect to another origin."""

from urllib.parse import urlencode

from django.conf import settings
from django.shortcuts import render, resolve_url

from pages.security import with_page_headers
from signin.oidc import discovery
from signin.oidc.config import enabled
from signin.oidc.refusals import SignInRefused


def provider_sign_out_url(request) -> str | None:
    """The provider's sign-out for this session's ID token; read it before the session ends."""
    id_token = request.session.get("oidc_id_token")
    if not enabled() or not id_token:
        return None
    try:
        endpoint = discovery.document().get("end_session_endpoint")
    except SignInRefused:
        return None
    if not isinstance(endpoint, str) or not endpoint:
        return None
    query = urlencode(
        {
            "id_token_hint": id_token,
            "client_id": settings.OIDC_CLIENT_ID,
            "post_logout_redirect_uri": request.build_absolute_uri(resolve_url(settings.LOGOUT_REDIRECT_URL)),
        }
    )
    return f"{endpoint}{'&' if '?' in endpoint else '?'}{query}"


def signed_out_page(request, provider_url: str):
    context = {"provider_url": provider_url, "provider_name": settings.OIDC_PROVIDER_NAME}
    return with_page_headers(render(request, "signin/oidc_signed_out.html", context))
