"""Token authentication: how a client gets in, and that nothing else does."""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def test_token_for_good_credentials(anon_client, alice):
    response = anon_client.post("/api/auth/token/", {"username": "alice", "password": "alice-password-1"})

    assert response.status_code == 200
    assert response.json() == {"token": Token.objects.get(user=alice).key}


def test_token_is_stable_across_logins(anon_client, alice):
    credentials = {"username": "alice", "password": "alice-password-1"}
    first = anon_client.post("/api/auth/token/", credentials, format="json").json()["token"]
    second = anon_client.post("/api/auth/token/", credentials, format="json").json()["token"]

    assert first == second


@pytest.mark.parametrize(
    "credentials",
    [
        {"username": "alice", "password": "wrong"},
        {"username": "nobody", "password": "alice-password-1"},
        {"username": "ALICE", "password": "alice-password-1"},
    ],
)
def test_bad_credentials_are_400_with_a_message(anon_client, alice, credentials):
    response = anon_client.post("/api/auth/token/", credentials, format="json")

    assert response.status_code == 400
    assert response.json() == {"non_field_errors": ["Unable to log in with provided credentials."]}
    assert not Token.objects.exists()


def test_missing_fields_are_named(anon_client, alice):
    response = anon_client.post("/api/auth/token/", {}, format="json")

    assert response.status_code == 400
    assert set(response.json()) == {"username", "password"}


def test_inactive_user_gets_no_token(anon_client, alice):
    alice.is_active = False
    alice.save()

    response = anon_client.post("/api/auth/token/", {"username": "alice", "password": "alice-password-1"})

    assert response.status_code == 400


def test_token_header_authenticates(alice, make_file):
    make_file(alice)
    token = Token.objects.create(user=alice)
    client = APIClient()

    response = client.get("/api/files/", HTTP_AUTHORIZATION=f"Token {token.key}")

    assert response.status_code == 200
    assert response.json()["count"] == 1


def test_wrong_token_is_401(anon_client, alice):
    Token.objects.create(user=alice)

    response = anon_client.get("/api/files/", HTTP_AUTHORIZATION="Token not-a-real-token")

    assert response.status_code == 401
    assert response.json() == {"detail": "Invalid token."}


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/api/files/"),
        ("post", "/api/files/"),
        ("get", "/api/files/1/"),
        ("delete", "/api/files/1/"),
        ("get", "/api/files/1/content/"),
        ("get", "/api/shares/"),
        ("post", "/api/shares/"),
        ("get", "/api/shares/1/"),
        ("patch", "/api/shares/1/"),
        ("delete", "/api/shares/1/"),
    ],
)
def test_unauthenticated_is_401(anon_client, method, path):
    response = getattr(anon_client, method)(path)

    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Token")
    assert response.json() == {"detail": "Authentication credentials were not provided."}
