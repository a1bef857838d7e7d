"""The migration to tokens kept as digests: a token DRF's authtoken handed
out before it keeps working after it, and its plain key is gone from the
database, on a real database."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from rest_framework.test import APIClient

from tests.migrating import back_to_the_latest_schema, migrate  # noqa: F401 (a fixture)
from tokens.models import ApiToken, digest_of

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("back_to_the_latest_schema")]

KEY = "0123456789abcdef0123456789abcdef01234567"  # DRF's form: 40 hex digits


def before_tokens():
    """The schema before the tokens app, and its historical apps."""
    executor = MigrationExecutor(connection)
    executor.migrate([("tokens", None)])
    return executor.loader.project_state([("authtoken", "0004_alter_tokenproxy_options")]).apps


def test_a_drf_token_made_before_keeps_working_and_its_key_is_not_kept(alice):
    old = before_tokens()
    try:
        old.get_model("authtoken", "Token").objects.create(key=KEY, user_id=alice.pk)
    finally:
        new = migrate([("tokens", "0002_keep_drf_tokens")])
    kept = ApiToken.objects.get()
    assert (kept.user_id, kept.digest, kept.expires_at) == (alice.pk, digest_of(KEY), None)
    assert not new.get_model("authtoken", "Token").objects.exists()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {connection.ops.quote_name(ApiToken._meta.db_table)}")
        assert KEY not in repr(cursor.fetchall())

    client = APIClient()
    response = client.get("/api/files/", HTTP_AUTHORIZATION=f"Token {KEY}")
    assert response.status_code == 200
    assert client.get("/api/files/", HTTP_AUTHORIZATION=f"Bearer {KEY[:-1]}0").status_code == 401
