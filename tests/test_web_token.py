"""The API tokens page: tokens made there are named, may expire, are shown
once and work on the API; several live side by side; each can be revoked
alone; bad input is a 4xx naming the problem."""

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from tokens.models import ApiToken, digest_of
from tokens.service import issue

pytestmark = pytest.mark.django_db


def api_status(key: str) -> int:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client.get("/api/shares/").status_code


def made_key(response) -> str:
    return re.search(r'<code class="token-key" id="new-token">([A-Za-z0-9_-]{43})</code>', response.content.decode())[1]


def make(client, name="laptop", expires_in_days=""):
    return client.post(reverse("web:token"), {"action": "create", "name": name, "expires_in_days": expires_in_days})


def test_a_token_is_shown_once_stored_as_its_digest_and_works(alice_web, alice):
    assert "You have no API token" in alice_web.get(reverse("web:token")).content.decode()
    made = make(alice_web, "backup script")
    assert made.status_code == 201
    key = made_key(made)
    token = ApiToken.objects.get(user=alice)
    assert (token.name, token.digest, token.expires_at) == ("backup script", digest_of(key), None)
    assert api_status(key) == 200
    again = alice_web.get(reverse("web:token")).content.decode()
    assert key not in again  # shown once
    assert "backup script" in again
    assert "never expires" in again


def test_several_tokens_live_side_by_side_and_one_is_revoked_alone(alice_web, alice):
    first = made_key(make(alice_web, "laptop"))
    second = made_key(make(alice_web, "server"))
    assert (api_status(first), api_status(second)) == (200, 200)
    laptop = ApiToken.objects.get(user=alice, name="laptop")
    revoked = alice_web.post(reverse("web:token"), {"action": "revoke", "token": laptop.pk}, follow=True)
    assert "The token was revoked" in revoked.content.decode()
    assert (api_status(first), api_status(second)) == (401, 200)
    assert list(ApiToken.objects.values_list("name", flat=True)) == ["server"]


def test_a_token_made_to_expire_stops_at_its_expiry(alice_web, alice):
    key = made_key(make(alice_web, "for a week", "7"))
    token = ApiToken.objects.get(user=alice)
    assert timedelta(days=7) - (token.expires_at - token.created_at) < timedelta(seconds=5)
    assert "expires on" in alice_web.get(reverse("web:token")).content.decode()
    assert api_status(key) == 200
    ApiToken.objects.update(expires_at=timezone.now())
    assert api_status(key) == 401
    assert "expired on" in alice_web.get(reverse("web:token")).content.decode()


@pytest.mark.parametrize(
    ("data", "status", "named"),
    [
        ({"action": "create", "name": ""}, 400, "This field is required."),
        ({"action": "create", "name": "x" * 101}, 400, "at most 100 characters"),
        ({"action": "create", "name": "ok", "expires_in_days": "3"}, 400, "Select a valid choice."),
        ({"action": "revoke"}, 400, "Say which token to revoke."),
        ({"action": "revoke", "token": "9" * 30}, 400, "Say which token to revoke."),
        ({"action": "revoke", "token": "12345"}, 404, "No such token among yours"),
    ],
)
def test_bad_input_is_a_4xx_naming_the_problem(alice_web, data, status, named):
    response = alice_web.post(reverse("web:token"), data)
    assert response.status_code == status
    assert named in response.content.decode()
    assert not ApiToken.objects.exists()


def test_another_users_token_is_not_found_and_stays(alice_web, bob):
    bobs, key = issue(bob, name="bob's")
    response = alice_web.post(reverse("web:token"), {"action": "revoke", "token": bobs.pk})
    assert response.status_code == 404
    assert api_status(key) == 200
    assert "bob&#x27;s" not in alice_web.get(reverse("web:token")).content.decode()


def test_past_the_most_tokens_the_page_says_so_with_a_409(alice_web, alice, settings):
    settings.API_TOKENS_PER_USER = 1
    assert make(alice_web, "one").status_code == 201
    refused = make(alice_web, "two")
    assert refused.status_code == 409
    assert "the most allowed" in refused.content.decode()
    assert ApiToken.objects.count() == 1


def test_the_page_needs_a_signed_in_owner(client):
    response = client.get(reverse("web:token"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("web:login"))
