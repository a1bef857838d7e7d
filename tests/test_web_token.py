"""The API token page: a token made in the web app is shown once and works
on the API; a new one replaces it; a revoked one stops working."""

import re

import pytest
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def api_status(key: str) -> int:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client.get("/api/shares/").status_code


def made_key(response) -> str:
    return re.search(r'<code class="token-key" id="new-token">([0-9a-f]{40})</code>', response.content.decode())[1]


def test_a_token_is_shown_once_and_works(alice_web, alice):
    assert "You have no API token" in alice_web.get(reverse("web:token")).content.decode()
    made = alice_web.post(reverse("web:token"), {"action": "create"})
    assert made.status_code == 201
    key = made_key(made)
    assert Token.objects.get(user=alice).key == key
    assert api_status(key) == 200
    again = alice_web.get(reverse("web:token")).content.decode()
    assert key not in again  # shown once
    assert "You have a token, made on" in again


def test_a_new_token_replaces_the_old_and_revoking_ends_it(alice_web):
    first = made_key(alice_web.post(reverse("web:token"), {"action": "create"}))
    second = made_key(alice_web.post(reverse("web:token"), {"action": "create"}))
    assert (api_status(first), api_status(second)) == (401, 200)
    revoked = alice_web.post(reverse("web:token"), {"action": "revoke"}, follow=True)
    assert "Your API token was revoked" in revoked.content.decode()
    assert api_status(second) == 401
    assert not Token.objects.exists()


def test_the_page_needs_a_signed_in_owner(client):
    response = client.get(reverse("web:token"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("web:login"))
