"""API tokens, sent as `Authorization: Token <key>` or `Authorization: Bearer <key>`.

DRF's TokenAuthentication knows only "Token"; clients generated from an
OpenAPI schema send "Bearer" by default, so both are accepted (one token
model, tokens.ApiToken, two spellings of the same header).
"""

from django.utils.translation import gettext_lazy as _
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from tokens import service


class TokenAuthentication(authentication.TokenAuthentication):
    keywords = ("token", "bearer")

    def authenticate(self, request):
        parts = authentication.get_authorization_header(request).split()
        if not parts or parts[0].lower().decode(errors="replace") not in self.keywords:
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed("Invalid token header: give the token after Token or Bearer.")
        try:
            key = parts[1].decode()
        except UnicodeError:
            raise exceptions.AuthenticationFailed("Invalid token header: the token is not valid text.") from None
        return self.authenticate_credentials(key)

    def authenticate_credentials(self, key):
        """The token and its user in one plain SELECT (tokens.service), with
        DRF's answers: the same for an unknown or expired token, another
        for an inactive user."""
        try:
            return service.authenticate(key)
        except service.InactiveUser:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted.")) from None
        except service.TokenRefused:
            raise exceptions.AuthenticationFailed(_("Invalid token.")) from None


class TokenAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "api.authentication.TokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "Your API token (POST /api/auth/token/), as `Bearer <token>` or `Token <token>`.",
        }
