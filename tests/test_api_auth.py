"""Token authentication: how a client gets in, and that nothing else does."""

import pytest
from rest_framework.test import APIClient

from api.views import LOG_IN_TOKEN_NAME
from tokens.models import ApiToken, digest_of
from tokens.service import issue

pytestmark = pytest.mark.django_db


def test_token_for_good_credentials(anon_client, alice):
    response = anon_client.post("/api/auth/token/", {"username": "alice", "password": "alice-password-1"})

    assert response.status_code == 200
    assert list(response.json()) == ["token"]
    token = ApiToken.objects.get(user=alice)
    assert (token.name, token.digest) == (LOG_IN_TOKEN_NAME, digest_of(response.json()["token"]))
    assert APIClient().get("/api/files/", HTTP_AUTHORIZATION=f"Token {response.json()['token']}").status_code == 200


def test_each_log_in_adds_a_token_and_the_earlier_ones_keep_working(anon_client, alice):
    credentials = {"username": "alice", "password": "alice-password-1"}
    first = anon_client.post("/api/auth/token/", credentials, format="json").json()["token"]
    second = anon_client.post("/api/auth/token/", credentials, format="json").json()["token"]

    assert first != second
    assert ApiToken.objects.filter(user=alice).count() == 2
    for key in (first, second):
        assert APIClient().get("/api/files/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200


def test_a_log_in_past_the_most_tokens_is_a_409_and_adds_none(anon_client, alice, settings):
    settings.API_TOKENS_PER_USER = 2
    credentials = {"username": "alice", "password": "alice-password-1"}
    answers = [anon_client.post("/api/auth/token/", credentials, format="json") for _ in range(3)]

    assert [answer.status_code for answer in answers] == [200, 200, 409]
    assert "revoke one" in answers[2].json()["detail"]
    assert ApiToken.objects.filter(user=alice).count() == 2


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
    assert not ApiToken.objects.exists()


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
    key = issue(alice, name="script")[1]
    client = APIClient()

    response = client.get("/api/files/", HTTP_AUTHORIZATION=f"Token {key}")

    assert response.status_code == 200
    assert response.json()["count"] == 1


def test_wrong_token_is_401(anon_client, alice):
    issue(alice, name="script")

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
