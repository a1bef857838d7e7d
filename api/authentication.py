"""API tokens, sent as `Authorization: Token <key>` or `Authorization: Bearer <key>`.

DRF's TokenAuthentication knows only "Token"; clients generated from an
OpenAPI schema send "Bearer" by default, so both are accepted (one token
model, two spellings of the same header).
"""

from django.contrib.auth import get_user_model
from django.db import connections, router, transaction
from django.utils.translation import gettext_lazy as _
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.authtoken.models import Token

from sharing import rows


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
        """DRF's lookup (the token and its user, one query; the same answers
        for an unknown token or an inactive user) as a plain SELECT: built
        by the ORM it cost ~0.3 ms of every API request (sharing/rows.py)."""
        token_model, user_model = self.get_model(), get_user_model()
        connection = connections[router.db_for_read(token_model)]
        row = rows.fetch_one(connection, rows.statement(connection, _token_sql, token_model, user_model), [key])
        if row is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        split = len(token_model._meta.concrete_fields)
        token = rows.instance(connection, token_model, row[:split])
        token.user = rows.instance(connection, user_model, row[split:])
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        return (token.user, token)


def _token_sql(connection, token_model, user_model) -> str:
    quote = connection.ops.quote_name
    token_table, user_table = quote(token_model._meta.db_table), quote(user_model._meta.db_table)
    user_id, token_user = quote(user_model._meta.pk.column), quote(token_model._meta.get_field("user").column)
    return (
        f"SELECT {rows.columns(connection, 't', token_model)}, {rows.columns(connection, 'u', user_model)} "
        f"FROM {token_table} t JOIN {user_table} u ON u.{user_id} = t.{token_user} "
        f"WHERE t.{quote(token_model._meta.pk.column)} = %s"
    )


class TokenAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "api.authentication.TokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "Your API token (POST /api/auth/token/), as `Bearer <token>` or `Token <token>`.",
        }


def issue_token(user) -> Token:
    """A new API token for `user`, replacing any it had (the old key stops
    working in the same transaction)."""
    with transaction.atomic():
        Token.objects.filter(user=user).delete()
        return Token.objects.create(user=user)


def revoke_tokens(user) -> None:
    """`user`'s API token no longer works."""
    Token.objects.filter(user=user).delete()
