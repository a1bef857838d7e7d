"""Password guessing is limited at the API token endpoint and the admin's
log-in, per client address and per username (hardening, item 3)."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client, RequestFactory
from rest_framework.test import APIClient

from ratelimit.limits import CountersUnavailable
from ratelimit.logins import attempt_succeeded
from tests.counting_hasher import hashing_count
from tests.ratelimit_backends import backend  # noqa: F401  (fixture)
from tests.test_hardening_logins import counters_out_of_reach  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db

TOKEN = "/api/auth/token/"
ADMIN_LOGIN = "/admin/login/"


@pytest.fixture
def root(db):
    return get_user_model().objects.create_superuser("root", "root@example.com", "root-password-1")


def test_the_eleventh_wrong_password_for_a_username_gets_429_without_hashing(alice, settings, backend):  # noqa: F811
    settings.PASSWORD_HASHERS = ["tests.counting_hasher.CountingHasher"]
    alice.set_password("alice-password-1")
    alice.save()
    answers = [APIClient().post(TOKEN, {"username": "alice", "password": f"guess{n}"}).status_code for n in range(10)]
    assert answers == [400] * 10
    before = hashing_count()
    refused = APIClient().post(TOKEN, {"username": "ALICE", "password": "alice-password-1"})
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) >= 1
    assert "Too many" in refused.json()["detail"]
    assert hashing_count() == before  # no hashing for a refused attempt


def test_right_passwords_do_not_count(alice):
    for _ in range(15):
        response = APIClient().post(TOKEN, {"username": "alice", "password": "alice-password-1"})
        assert response.status_code == 200


def test_one_address_trying_many_usernames_is_stopped(db, settings):
    settings.LOGIN_ATTEMPTS_PER_ADDRESS = 5
    answers = [APIClient().post(TOKEN, {"username": f"user{n}", "password": "x"}).status_code for n in range(6)]
    assert answers == [400] * 5 + [429]
    other = APIClient(REMOTE_ADDR="192.0.2.50").post(TOKEN, {"username": "user0", "password": "x"})
    assert other.status_code == 400


def test_the_admin_login_is_limited_too(root):
    answers = [
        Client().post(ADMIN_LOGIN, {"username": "root", "password": f"nope{n}", "next": "/admin/"}).status_code
        for n in range(10)
    ]
    assert answers == [200] * 10  # the form again, with its error
    refused = Client().post(ADMIN_LOGIN, {"username": "root", "password": "root-password-1", "next": "/admin/"})
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) >= 1


def test_a_successful_admin_login_is_not_counted(root):
    for _ in range(12):
        client = Client()
        response = client.post(ADMIN_LOGIN, {"username": "root", "password": "root-password-1", "next": "/admin/"})
        assert response.status_code == 302


def test_a_signed_in_users_wrong_admin_passwords_still_count(root, alice):
    client = Client()
    client.force_login(alice)  # signed in, but not staff: the admin asks for a log-in
    answers = [
        client.post(ADMIN_LOGIN, {"username": "root", "password": f"nope{n}", "next": "/admin/"}).status_code
        for n in range(10)
    ]
    assert answers == [200] * 10
    assert client.post(ADMIN_LOGIN, {"username": "root", "password": "nope", "next": "/admin/"}).status_code == 429


def test_usernames_longer_than_any_count_as_their_first_150_characters(db, settings):
    # No username is longer (Django's field): a guesser cannot spread its
    # failures over endless spellings of one.
    settings.LOGIN_FAILURES_PER_USERNAME_AND_ADDRESS = 3
    long_name = "a" * 150
    answers = [APIClient().post(TOKEN, {"username": long_name + tail, "password": "x"}).status_code for tail in "wxyz"]
    assert answers == [400] * 3 + [429]


def test_a_successful_log_in_it_cannot_take_back_is_logged_with_its_cause(counters_out_of_reach, caplog):  # noqa: F811
    request = RequestFactory().post(TOKEN, REMOTE_ADDR="192.0.2.9")
    attempt_succeeded(request, "alice")
    (record,) = [r for r in caplog.records if "take back" in r.getMessage()]
    assert record.levelname == "WARNING"
    assert record.exc_info[0] is CountersUnavailable  # its traceback goes with it
