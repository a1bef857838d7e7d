"""Guessing limits that stop the guesser, not the people it guesses against:
a link's wrong passwords are counted per (link, address), so the recipient
still gets in; the password change's old password counts like a log-in; and
every refusal says how long, in words a person reads."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from ratelimit.waits import wait_in_words
from sharing.models import Share

pytestmark = pytest.mark.django_db

ATTACKER, RECIPIENT = "203.0.113.5", "198.51.100.7"


def guess(client, share, password, address):
    return client.get(f"/s/{share.token}", HTTP_X_SHARE_PASSWORD=password, REMOTE_ADDR=address)


def test_a_guesser_locks_out_only_itself(client, shared_file):
    share = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1), password="open sesame")
    for _ in range(10):
        assert guess(client, share, "wrong", ATTACKER).status_code == 403
    refused = guess(client, share, "open sesame", ATTACKER)
    assert refused.status_code == 429
    wait = int(refused["Retry-After"])
    assert 590 <= wait <= 660  # the rest of the 10-minute window (counted in slices)
    assert refused.content.decode() == (
        "Too many wrong passwords for this link from your address. If you are its recipient, ask the sender "
        f"to check the password. Try again in {wait_in_words(wait)}.\n"
    )
    # The recipient, elsewhere, is not locked out by someone else's guesses.
    allowed = guess(client, share, "open sesame", RECIPIENT)
    assert allowed.status_code == 200
    assert b"".join(allowed.streaming_content) == shared_file.content.open("rb").read()
    assert guess(client, share, "wrong", RECIPIENT).status_code == 403


def test_many_addresses_guessing_one_link_meet_its_ceiling(client, shared_file, settings):
    share = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1), password="open sesame")
    for n in range(200):  # ten addresses would each stop at 10: spread over 25
        assert guess(client, share, "wrong", f"192.0.2.{n // 8}").status_code == 403
    assert guess(client, share, "wrong", "192.0.2.200").status_code == 429


@pytest.mark.parametrize(
    ("seconds", "words"),
    [(1, "1 second"), (59, "59 seconds"), (60, "1 minute"), (61, "2 minutes"), (621, "11 minutes")],
)
def test_waits_read_in_seconds_then_minutes(seconds, words):
    assert wait_in_words(seconds) == words


def test_wrong_old_passwords_are_throttled_like_log_ins(alice_web, settings):
    settings.LOGIN_FAILURES_PER_USERNAME = 3
    url = reverse("web:password-change")
    wrong = {"old_password": "not it", "new_password1": "a-new-secret-9", "new_password2": "a-new-secret-9"}
    for _ in range(3):
        assert alice_web.post(url, wrong).status_code == 200  # the form again, "incorrect"
    refused = alice_web.post(url, {**wrong, "old_password": "alice-password-1"})
    assert refused.status_code == 429
    wait = int(refused["Retry-After"])
    assert 590 <= wait <= 660
    assert f"Too many log-in attempts. Try again in {wait_in_words(wait)}." in refused.content.decode()
