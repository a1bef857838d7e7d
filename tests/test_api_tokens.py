"""API tokens (tokens/): kept as digests, several per user, expiring when
asked, and revoked with the password they were made under or when their
user is deactivated."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from tokens import service
from tokens.models import ApiToken, digest_of

pytestmark = pytest.mark.django_db


def api_status(key: str) -> int:
    return APIClient().get("/api/files/", HTTP_AUTHORIZATION=f"Token {key}").status_code


def every_stored_value() -> str:
    """Every value of every token row, as the database holds them."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {connection.ops.quote_name(ApiToken._meta.db_table)}")
        return repr(cursor.fetchall())


def test_the_key_is_not_stored_only_its_digest(alice):
    token, key = service.issue(alice, name="laptop")
    assert len(key) >= 43  # 256 random bits
    assert key not in every_stored_value()
    assert ApiToken.objects.get().digest == digest_of(key)
    user, found = service.authenticate(key)
    assert (user.pk, found.pk) == (alice.pk, token.pk)


def test_an_expired_token_answers_as_an_unknown_one(alice):
    soon = timezone.now() + timedelta(hours=1)
    _, key = service.issue(alice, name="an hour", expires_at=soon)
    assert service.authenticate(key, now=soon - timedelta(microseconds=1))[0].pk == alice.pk
    for key_tried in (key, "not-a-key"):
        with pytest.raises(service.UnknownToken):
            service.authenticate(key_tried, now=soon)


def test_revoking_one_token_leaves_the_others(alice, bob):
    laptop, laptop_key = service.issue(alice, name="laptop")
    _, server_key = service.issue(alice, name="server")
    _, bobs_key = service.issue(bob, name="bob's")
    assert not service.revoke(bob, laptop.pk)  # not bob's to revoke
    assert service.revoke(alice, laptop.pk)
    assert [api_status(key) for key in (laptop_key, server_key, bobs_key)] == [401, 200, 200]


def test_a_password_changed_on_the_web_page_revokes_every_token(alice, alice_web, bob):
    keys = [service.issue(alice, name=name)[1] for name in ("laptop", "server")]
    _, bobs_key = service.issue(bob, name="bob's")
    response = alice_web.post(
        reverse("web:password-change"),
        {"old_password": "alice-password-1", "new_password1": "a-new-one-2!x", "new_password2": "a-new-one-2!x"},
    )
    assert response.status_code == 302
    assert [api_status(key) for key in keys] == [401, 401]
    assert api_status(bobs_key) == 200
    assert not ApiToken.objects.filter(user=alice).exists()
    # A token made after the change works.
    assert api_status(service.issue(alice, name="new")[1]) == 200


def test_set_password_and_save_revokes_too(alice):
    _, key = service.issue(alice, name="laptop")
    alice.set_password("another-password-3")
    alice.save()
    assert api_status(key) == 401


def test_deactivating_the_user_revokes_and_reactivating_gives_nothing_back(alice):
    _, key = service.issue(alice, name="laptop")
    alice.is_active = False
    alice.save()
    alice.is_active = True
    alice.save()
    assert api_status(key) == 401
    assert not ApiToken.objects.exists()


def test_saves_that_change_neither_keep_the_tokens(alice):
    _, key = service.issue(alice, name="laptop")
    alice.first_name = "Alice"
    alice.save()
    alice.last_login = timezone.now()
    alice.save(update_fields=["last_login"])
    assert api_status(key) == 200


def test_a_password_hashed_again_at_a_log_in_keeps_the_tokens(settings):
    """Django stores a password again under newer hasher settings at a
    log-in: the same password, so no change."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    carol = get_user_model().objects.create_user("carol", password="carol-password-1")
    _, key = service.issue(carol, name="laptop")
    settings.PASSWORD_HASHERS = [
        "django.contrib.auth.hashers.PBKDF2PasswordHasher",
        "django.contrib.auth.hashers.MD5PasswordHasher",
    ]
    carol = get_user_model().objects.get(pk=carol.pk)
    assert carol.check_password("carol-password-1")
    carol.refresh_from_db()
    assert carol.password.startswith("pbkdf2_sha256$")  # it was hashed again
    assert api_status(key) == 200
