"""Log-in limits (hardening, item 3): a refused attempt hashes nothing, the
admin answers with its own form, a success gives back only its own attempt,
and counters out of reach pause log-ins instead of failing them."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from freezegun import freeze_time
from rest_framework.test import APIClient

from ratelimit.counters import reset_shared_counters
from sharing.models import Share
from tests.counting_hasher import hashing_count
from tests.helpers import create_share, free_port
from tests.ratelimit_backends import backend  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db

TOKEN = "/api/auth/token/"
ADMIN_LOGIN = "/admin/login/"


@pytest.fixture
def counted_hashing(settings):
    settings.PASSWORD_HASHERS = ["tests.counting_hasher.CountingHasher"]


@pytest.fixture
def carol(counted_hashing):
    return get_user_model().objects.create_superuser("carol", "carol@example.com", "carol-password-1")


def test_a_refused_api_attempt_hashes_no_password(carol, settings, backend):  # noqa: F811
    settings.LOGIN_FAILURES_PER_USERNAME = 3
    for n in range(3):
        before = hashing_count()
        assert APIClient().post(TOKEN, {"username": "carol", "password": f"guess{n}"}).status_code == 400
        assert hashing_count() > before  # a counted attempt does hash
    before = hashing_count()
    for username in ("carol", "Carol", "nobody"):
        response = APIClient().post(TOKEN, {"username": username, "password": "carol-password-1"})
        if username == "nobody":
            assert response.status_code == 400  # another username is not limited
            continue
        assert response.status_code == 429
        assert response.json()["detail"].startswith("Too many log-in attempts.")
        assert 1 <= int(response["Retry-After"]) <= 660
    # Only the unknown username hashed (Django hashes once to hide that it is unknown).
    assert hashing_count() == before + 1


def test_a_refused_admin_attempt_shows_the_form_with_429_and_hashes_nothing(carol, settings):
    settings.LOGIN_FAILURES_PER_USERNAME = 2
    for n in range(2):
        response = Client().post(ADMIN_LOGIN, {"username": "carol", "password": f"nope{n}", "next": "/admin/"})
        assert response.status_code == 200
    before = hashing_count()
    response = Client().post(ADMIN_LOGIN, {"username": "carol", "password": "carol-password-1", "next": "/admin/"})
    assert hashing_count() == before
    assert response.status_code == 429
    assert 1 <= int(response["Retry-After"]) <= 660
    assert response["Content-Type"].startswith("text/html")
    page = response.content.decode()
    assert 'id="login-form"' in page  # the admin's own page, ready for the next try
    assert 'name="next" value="/admin/"' in page
    assert "Too many log-in attempts. Try again in" in page
    assert "carol-password-1" not in page


def test_a_successful_login_gives_back_its_own_attempt_only(settings, alice, backend):  # noqa: F811
    """A success refunds one attempt; it must not also erase an earlier failure
    (which let one address trade its own logins for extra guesses)."""
    settings.LOGIN_ATTEMPTS_PER_ADDRESS = 3
    with freeze_time("2026-05-01 10:00:00") as frozen:
        for n in range(2):
            assert APIClient().post(TOKEN, {"username": f"user{n}", "password": "x"}).status_code == 400
        frozen.tick(timedelta(seconds=61))  # a later bucket of the 10-minute window
        assert APIClient().post(TOKEN, {"username": "alice", "password": "alice-password-1"}).status_code == 200
        assert APIClient().post(TOKEN, {"username": "user2", "password": "x"}).status_code == 400
        assert APIClient().post(TOKEN, {"username": "user3", "password": "x"}).status_code == 429


@pytest.fixture
def counters_out_of_reach(settings):
    """Rate counters on a Redis that is not there (a closed port)."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{free_port()}/0",
        }
    }
    reset_shared_counters()
    yield
    reset_shared_counters()


def test_counters_out_of_reach_pause_api_logins_with_503(alice, counters_out_of_reach):
    response = APIClient().post(TOKEN, {"username": "alice", "password": "alice-password-1"})
    assert response.status_code == 503
    assert response["Retry-After"] == "1"
    assert response.json()["detail"].startswith("Log-ins are paused for a moment")


def test_counters_out_of_reach_pause_admin_logins_with_503(admin_user, counters_out_of_reach):
    response = Client().post(ADMIN_LOGIN, {"username": "root", "password": "root-password-1"})
    assert response.status_code == 503
    assert response["Retry-After"] == "1"
    assert "Log-ins are paused for a moment" in response.content.decode()


def test_counters_out_of_reach_leave_downloads_working_but_close_passwords(alice, make_file, counters_out_of_reach):
    stored = make_file(alice)
    open_link = create_share(stored, 60)
    response = Client().get(reverse("public-share", args=[open_link.token]))
    assert response.status_code == 200  # the request limit only spreads load: it fails open
    assert b"".join(response.streaming_content) == b"hello, world\n"
    protected = Share.create_for(
        file=stored, expires_at=timezone.now() + timezone.timedelta(minutes=5), password="secret"
    )
    guess = Client().get(reverse("public-share", args=[protected.token]), HTTP_X_SHARE_PASSWORD="guess")
    assert guess.status_code == 503  # a guess is never let through uncounted
    assert guess["Retry-After"] == "1"
