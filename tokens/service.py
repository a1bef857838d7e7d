"""Issuing, revoking and checking API tokens: what the API's log-in, the
web page and the API's authentication call."""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connections, router, transaction
from django.utils import timezone

from sharing import rows
from tokens.models import ApiToken, digest_of, new_key


class TokenRefused(Exception):
    """The key does not let anyone in."""


class UnknownToken(TokenRefused):
    """No such key, or its token expired: the same answer for both."""


class InactiveUser(TokenRefused):
    """The key's user may not sign in."""


class TooManyTokens(Exception):
    def __init__(self, limit: int):
        super().__init__(limit)
        self.limit = limit


def issue(user, *, name: str, expires_at=None) -> tuple[ApiToken, str]:
    """A new token for `user` and its key, which is returned here only.

    A user holds at most API_TOKENS_PER_USER tokens (TooManyTokens past
    that): a script that logs in on every run would otherwise add a row
    each time, for ever. The count and the insert are one transaction
    holding the user's row (SQLite: the write lock, taken at BEGIN), so
    racing issues cannot pass the limit together."""
    key = new_key()
    with transaction.atomic():
        list(get_user_model().objects.select_for_update().filter(pk=user.pk).values_list("pk"))
        limit = settings.API_TOKENS_PER_USER
        if ApiToken.objects.filter(user=user).count() >= limit:
            raise TooManyTokens(limit)
        token = ApiToken.objects.create(user=user, name=name, digest=digest_of(key), expires_at=expires_at)
    return token, key


def revoke(user, token_id: int) -> bool:
    """`user`'s token `token_id` no longer works; False if they had no such token."""
    deleted, _ = ApiToken.objects.filter(user=user, pk=token_id).delete()
    return deleted > 0


def authenticate(key: str, *, now=None) -> tuple:
    """(user, token) for `key`, or UnknownToken / InactiveUser.

    One plain SELECT of the token and its user (sharing/rows.py: built by
    the ORM it cost ~0.3 ms of every API request); the expiry is checked
    on the row read, with the clock read after it."""
    user_model = get_user_model()
    connection = connections[router.db_for_read(ApiToken)]
    sql = rows.statement(connection, _lookup_sql, ApiToken, user_model)
    row = rows.fetch_one(connection, sql, [digest_of(key)])
    if row is None:
        raise UnknownToken()
    split = len(ApiToken._meta.concrete_fields)
    token = rows.instance(connection, ApiToken, row[:split])
    token.user = rows.instance(connection, user_model, row[split:])
    if not token.is_live(now or timezone.now()):
        raise UnknownToken()
    if not token.user.is_active:
        raise InactiveUser()
    return token.user, token


def _lookup_sql(connection, token_model, user_model) -> str:
    quote = connection.ops.quote_name
    token_table, user_table = quote(token_model._meta.db_table), quote(user_model._meta.db_table)
    user_id, token_user = quote(user_model._meta.pk.column), quote(token_model._meta.get_field("user").column)
    return (
        f"SELECT {rows.columns(connection, 't', token_model)}, {rows.columns(connection, 'u', user_model)} "
        f"FROM {token_table} t JOIN {user_table} u ON u.{user_id} = t.{token_user} "
        f"WHERE t.{quote(token_model._meta.get_field('digest').column)} = %s"
    )
