"""Lockouts a stranger cannot cause: failed sign-ins are counted per
(username, address), so a guesser pauses itself while the owner signs in
from their own address; a much higher per-username ceiling stops guessers
spread over many addresses; and every refused password says how many tries
are left before a pause (sign-in page, admin, a link's password form)."""

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from sharing.models import Share

pytestmark = pytest.mark.django_db

OWNER, GUESSER = "127.0.0.1", "127.0.0.2"
ADMIN_LOGIN = "/admin/login/"


def sign_in(password: str, address: str, username: str = "alice"):
    return Client(REMOTE_ADDR=address).post(reverse("web:login"), {"username": username, "password": password})


def test_ten_wrong_sign_ins_from_elsewhere_do_not_stop_the_owner(alice):
    for n in range(10):
        assert sign_in(f"guess-{n}", GUESSER).status_code == 200  # the form again
    assert sign_in("alice-password-1", OWNER).status_code == 302  # signed in
    assert (
        APIClient(REMOTE_ADDR=OWNER)
        .post("/api/auth/token/", {"username": "alice", "password": "alice-password-1"})
        .status_code
        == 200
    )


def test_a_flood_from_one_address_is_still_refused(alice):
    for n in range(10):
        assert sign_in(f"guess-{n}", GUESSER).status_code == 200
    refused = sign_in("alice-password-1", GUESSER)  # even the right password
    assert refused.status_code == 429
    assert 590 <= int(refused["Retry-After"]) <= 660
    assert "Too many log-in attempts. Try again in" in refused.content.decode()


def test_guessers_spread_over_many_addresses_meet_the_username_ceiling(alice, settings):
    settings.LOGIN_FAILURES_PER_USERNAME = 25
    for n in range(25):  # five addresses, five failures each: none meets its own 10
        assert sign_in(f"guess-{n}", f"192.0.2.{n // 5}").status_code == 200
    assert sign_in("alice-password-1", "192.0.2.99").status_code == 429
    assert sign_in("guess", "192.0.2.99", username="bob").status_code == 200  # another account is not paused


def test_the_sign_in_page_says_how_many_tries_are_left(alice):
    first = sign_in("guess-1", GUESSER)
    assert "9 tries left before a pause." in first.content.decode()
    for n in range(8):
        sign_in(f"guess-{n}", GUESSER)
    assert "No tries left: the next one has to wait." in sign_in("guess-x", GUESSER).content.decode()
    # The owner's own count, from their address, is untouched.
    assert "9 tries left before a pause." in sign_in("typo", OWNER).content.decode()


def test_the_admin_sign_in_says_how_many_tries_are_left(admin_user):
    response = Client(REMOTE_ADDR=GUESSER).post(
        ADMIN_LOGIN, {"username": "root", "password": "nope", "next": "/admin/"}
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert 'id="login-form"' in page
    assert "9 tries left before a pause." in page


def test_a_link_password_form_says_how_many_tries_are_left(client, shared_file):
    share = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1), password="open sesame")
    url = reverse("public-share", args=[share.token])
    wrong = client.post(url, {"password": "guess"}, HTTP_ACCEPT="text/html", REMOTE_ADDR=GUESSER)
    assert wrong.status_code == 403
    page = wrong.content.decode()
    assert "Wrong password. Try again. 9 tries left before a pause." in page


def test_a_link_lockout_page_has_a_short_heading_and_the_explanation_below(client, shared_file):
    share = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1), password="open sesame")
    url = reverse("public-share", args=[share.token])
    for _ in range(10):
        client.post(url, {"password": "guess"}, HTTP_ACCEPT="text/html", REMOTE_ADDR=GUESSER)
    refused = client.post(url, {"password": "guess"}, HTTP_ACCEPT="text/html", REMOTE_ADDR=GUESSER)
    assert refused.status_code == 429
    page = refused.content.decode()
    assert "<h1>Too many wrong passwords</h1>" in page
    assert "<p>Too many wrong passwords for this link from your address. If you are its recipient" in page
    assert "Try again in 1" in page  # "10 minutes" or "11 minutes"
