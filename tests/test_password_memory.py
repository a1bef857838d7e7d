"""A right link password is hashed once, then remembered (links.remembered):
for the address that proved it, for the link's current password only; the
hashes one address may cost are limited, right passwords included; and a
recipient who proved the password is not locked out by other addresses'
guesses."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from collect.models import UploadRequest
from links import guards
from links.remembered import RememberedPasswords
from sharing.models import Share
from tests.counting_hasher import hashing_count

pytestmark = pytest.mark.django_db

RECIPIENT, GUESSER = "198.51.100.7", "203.0.113.5"
PASSWORD = "open sesame"


@pytest.fixture
def counted_hashing(settings):
    settings.PASSWORD_HASHERS = ["tests.counting_hasher.CountingHasher"]


@pytest.fixture
def locked_share(shared_file, counted_hashing) -> Share:
    return Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1), password=PASSWORD)


def head(client, share, password, address=RECIPIENT):
    return client.head(f"/s/{share.token}", HTTP_X_SHARE_PASSWORD=password, REMOTE_ADDR=address)


def test_a_proven_password_is_hashed_once_for_many_requests(client, locked_share):
    before = hashing_count()
    answers = [head(client, locked_share, PASSWORD).status_code for _ in range(30)]
    assert answers == [200] * 30
    assert hashing_count() - before == 1  # the first request; the other 29 were remembered


def test_a_resume_with_the_header_is_served_without_a_hash(client, locked_share, shared_file):
    content = shared_file.content.open("rb").read()
    whole = client.get(f"/s/{locked_share.token}", HTTP_X_SHARE_PASSWORD=PASSWORD, REMOTE_ADDR=RECIPIENT)
    assert b"".join(whole.streaming_content) == content
    before = hashing_count()
    resumed = client.get(
        f"/s/{locked_share.token}", HTTP_X_SHARE_PASSWORD=PASSWORD, HTTP_RANGE="bytes=5-", REMOTE_ADDR=RECIPIENT
    )
    assert resumed.status_code == 206
    assert b"".join(resumed.streaming_content) == content[5:]
    assert hashing_count() == before


def test_a_changed_password_is_not_remembered(client, locked_share):
    assert head(client, locked_share, PASSWORD).status_code == 200
    assert locked_share.change(password="another one")
    locked_share.refresh_from_db()
    before = hashing_count()
    assert head(client, locked_share, PASSWORD).status_code == 403  # checked against the new hash
    assert head(client, locked_share, "another one").status_code == 200
    assert head(client, locked_share, "another one").status_code == 200
    assert hashing_count() - before == 2  # the old password once, the new one once


def test_a_wrong_password_is_never_remembered(client, locked_share):
    before = hashing_count()
    assert [head(client, locked_share, "guess").status_code for _ in range(3)] == [403] * 3
    assert hashing_count() - before == 3


def test_a_password_proven_elsewhere_lets_no_limited_address_in(client, locked_share):
    assert head(client, locked_share, PASSWORD, RECIPIENT).status_code == 200  # remembered for the recipient
    for _ in range(10):
        assert head(client, locked_share, "guess", GUESSER).status_code == 403
    # The guesser is refused before any check, the right password included:
    # the recipient's memory does not answer for it.
    assert head(client, locked_share, PASSWORD, GUESSER).status_code == 429


def test_the_recipient_stays_in_when_guesses_from_many_addresses_reach_the_link_ceiling(client, locked_share):
    assert head(client, locked_share, PASSWORD, RECIPIENT).status_code == 200
    for n in range(200):  # 25 addresses, 8 guesses each: none meets its own limit
        assert head(client, locked_share, "guess", f"192.0.2.{n // 8}").status_code == 403
    assert head(client, locked_share, "guess", "192.0.2.200").status_code == 429  # the ceiling holds
    # The recipient proved the password before, from their address: still in.
    assert head(client, locked_share, PASSWORD, RECIPIENT).status_code == 200


def test_right_passwords_that_are_hashed_are_limited_too(client, locked_share, monkeypatch):
    # A worker that remembers nothing (as if its memory were always full of
    # other links): every right password costs a hash, and those are counted.
    monkeypatch.setattr(guards, "REMEMBERED", RememberedPasswords(most=0))
    limit = guards.HASHED_PASSWORDS_BY_ADDRESS.limit
    answers = [head(client, locked_share, PASSWORD).status_code for _ in range(limit)]
    assert answers == [200] * limit
    before = hashing_count()
    refused = head(client, locked_share, PASSWORD)
    assert refused.status_code == 429
    assert hashing_count() == before
    assert head(client, locked_share, PASSWORD, "192.0.2.9").status_code == 200  # another address is not


def test_upload_request_passwords_are_remembered_too(client, alice, counted_hashing):
    upload_request = UploadRequest.create_for(
        owner=alice, expires_at=timezone.now() + timedelta(hours=1), password=PASSWORD
    )
    url = reverse("collect:page", args=[upload_request.token])
    before = hashing_count()
    for _ in range(5):
        assert client.post(url, {"password": PASSWORD}, REMOTE_ADDR=RECIPIENT).status_code == 303
    assert hashing_count() - before == 1


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_memory_lasts_its_seconds_then_is_forgotten():
    clock = Clock()
    remembered = RememberedPasswords(seconds=60, clock=clock)
    remembered.remember("tok", "hash", "pw", "192.0.2.1")
    assert remembered.knows("tok", "hash", "pw", "192.0.2.1")
    for other in (("tok", "hash2", "pw", "192.0.2.1"), ("tok", "hash", "pw2", "192.0.2.1"), ("tok", "hash", "pw", "x")):
        assert not remembered.knows(*other)
    clock.now += 59.9
    assert remembered.knows("tok", "hash", "pw", "192.0.2.1")
    clock.now += 0.2
    assert not remembered.knows("tok", "hash", "pw", "192.0.2.1")


def test_a_memory_is_forgotten_at_its_last_instant():
    # "less than `seconds` ago": at exactly `seconds` it is gone.
    clock = Clock()
    remembered = RememberedPasswords(seconds=60, clock=clock)
    remembered.remember("tok", "hash", "pw", "192.0.2.1")
    clock.now += 60
    assert not remembered.knows("tok", "hash", "pw", "192.0.2.1")


def test_the_memory_is_bounded_and_forgets_the_least_recently_used():
    remembered = RememberedPasswords(most=2)
    remembered.remember("a", "h", "pw", "ip")
    remembered.remember("b", "h", "pw", "ip")
    assert remembered.knows("a", "h", "pw", "ip")  # now the most recently used
    remembered.remember("c", "h", "pw", "ip")
    assert remembered.knows("a", "h", "pw", "ip")
    assert not remembered.knows("b", "h", "pw", "ip")
    assert remembered.knows("c", "h", "pw", "ip")


def test_parts_cannot_run_into_each_other():
    remembered = RememberedPasswords()
    remembered.remember("ab", "c", "pw", "ip")
    assert not remembered.knows("a", "bc", "pw", "ip")
    remembered.remember("t", "h", "\udcff lone surrogate", "ip")  # never raises
    assert remembered.knows("t", "h", "\udcff lone surrogate", "ip")
