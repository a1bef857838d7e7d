"""An encrypted link's secret wrapped with a password (docs/encryption.md, "A
password instead of the fragment"): taken with the share and its sealed
metadata or not at all, refused with a 400 naming what is wrong, held to
its size by the database; GET /s/<token>/key answers the public half, and
/sealed hands the wrapped secret out only behind the password's verifier,
which the links' throttles count like any password."""

import base64
import os
import struct
import unicodedata
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.test import Client
from django.utils import timezone
from microcloud_cli.errors import Failure
from microcloud_cli.sealing import new_secret, open_metadata, seal_metadata
from microcloud_cli.wrapping import check_parameters, derive, from_b64url, unwrap, wrap

from sharing.models import Download, SealedMetadata, Share, ShareEvent, create_sealed_share, sealed
from sharing.models.sealed import WRAPPED_SECRET_BYTES

pytestmark = pytest.mark.django_db

FILES = [{"name": "minutes.txt", "type": "text/plain", "size": 13}]
PASSWORD = "correct horse battery staple"
FAST = 100_000  # the least the server takes: the tests derive many keys


@pytest.fixture
def ciphertext_file(alice, make_file):
    return make_file(alice, name="encrypted-1", data=os.urandom(200), content_type="application/octet-stream")


def create(client, stored, **fields):
    return client.post("/api/shares/", {"file": stored.pk, "expires_in": 3600, **fields}, format="json")


def wrapped_link(client, stored, secret=None, password=PASSWORD):
    secret = secret or new_secret()
    verifier, wrapped = wrap(secret, password, FAST)
    blob = seal_metadata(secret, FILES)
    response = create(client, stored, sealed_metadata=blob, password=verifier, wrapped_secret=wrapped)
    assert response.status_code == 201, response.content
    return response.json()["token"], secret, verifier, wrapped


def raw(iterations=FAST, version=1, size=WRAPPED_SECRET_BYTES) -> str:
    # Fixed bytes after the header: the tests' ids are the same in every
    # collecting process (pytest-xdist refuses to run otherwise).
    data = struct.pack(">BI", version, iterations) + bytes(range(7, 7 + size - 5))
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def test_the_password_opens_the_link_and_the_server_holds_neither(alice_client, ciphertext_file):
    token, secret, verifier, wrapped = wrapped_link(alice_client, ciphertext_file)
    share = Share.objects.get(token=token)
    assert share.check_password(verifier)
    assert not share.check_password(PASSWORD)
    stored = bytes(SealedMetadata.objects.get(share=share).wrapped_secret)
    assert stored == from_b64url(wrapped)
    assert secret not in stored

    parameters = Client().get(f"/s/{token}/key")
    assert parameters.status_code == 200
    assert parameters["Cache-Control"] == "no-store"
    body = parameters.json()
    assert body == {"kdf": "PBKDF2-SHA256", "iterations": FAST, "salt": body["salt"]}
    derived = derive(PASSWORD, from_b64url(body["salt"]), body["iterations"])
    assert derived.verifier == verifier

    got = Client().get(f"/s/{token}/sealed", headers={"X-Share-Password": derived.verifier})
    assert got.status_code == 200
    assert got["X-Wrapped-Secret"] == wrapped
    assert unwrap(got["X-Wrapped-Secret"], derived.key) == secret
    assert open_metadata(secret, got.content)["files"] == FILES
    share.refresh_from_db()
    assert (share.download_count, Download.objects.filter(share=share).count()) == (0, 0)


def test_a_link_without_a_wrapped_secret_sends_no_such_header(alice_client, ciphertext_file):
    token = create(alice_client, ciphertext_file, sealed_metadata=seal_metadata(new_secret(), FILES)).json()["token"]
    got = Client().get(f"/s/{token}/sealed")
    assert got.status_code == 200
    assert "X-Wrapped-Secret" not in got


@pytest.mark.parametrize(
    ("wrapped", "said"),
    [
        ("not base64!", "Not URL-safe base64"),
        (raw(size=64), "A wrapped secret is 65 bytes; this is 64."),
        (base64.urlsafe_b64encode(b"\1" * 66).decode(), "A wrapped secret is 65 bytes; this is 66."),
        ("A" * 89, "Ensure this field has no more than 88 characters."),
        (raw(version=2), "A wrapped secret of version 2 is not known: only version 1 is."),
        (raw(iterations=1000), "iterations are 100,000 to 10,000,000; this one has 1,000."),
        (raw(iterations=99_999), "this one has 99,999."),
        (raw(iterations=10_000_001), "this one has 10,000,001."),
        (raw(iterations=0xFFFFFFFF), "this one has 4,294,967,295."),
    ],
)
def test_what_cannot_be_a_wrapped_secret_is_a_400_naming_it(alice_client, ciphertext_file, wrapped, said):
    blob = seal_metadata(new_secret(), FILES)
    response = create(alice_client, ciphertext_file, sealed_metadata=blob, password="v", wrapped_secret=wrapped)
    assert response.status_code == 400
    assert said in " ".join(response.json()["wrapped_secret"])
    assert not Share.objects.exists()


@pytest.mark.parametrize("iterations", [100_000, 600_000, 10_000_000])
def test_the_bounds_of_the_iterations_are_taken(alice_client, ciphertext_file, iterations):
    blob = seal_metadata(new_secret(), FILES)
    response = create(alice_client, ciphertext_file, sealed_metadata=blob, password="v", wrapped_secret=raw(iterations))
    assert response.status_code == 201, response.content
    assert Client().get(f"/s/{response.json()['token']}/key").json()["iterations"] == iterations


def test_a_wrapped_secret_needs_sealed_metadata_and_a_password(alice_client, ciphertext_file):
    blob = seal_metadata(new_secret(), FILES)
    alone = create(alice_client, ciphertext_file, wrapped_secret=raw())
    assert alone.status_code == 400
    assert set(alone.json()) == {"sealed_metadata", "password"}
    assert "send its sealed_metadata too" in alone.json()["sealed_metadata"][0]
    no_password = create(alice_client, ciphertext_file, sealed_metadata=blob, wrapped_secret=raw())
    assert no_password.status_code == 400
    assert list(no_password.json()) == ["password"]
    assert "send its verifier as password" in no_password.json()["password"][0]
    no_metadata = create(alice_client, ciphertext_file, password="v", wrapped_secret=raw())
    assert list(no_metadata.json()) == ["sealed_metadata"]
    assert not Share.objects.exists()
    # The domain holds the same rule for any other caller.
    with pytest.raises(ValidationError, match="needs the password's verifier"):
        create_sealed_share(
            sealed_metadata=from_b64url(blob),
            wrapped_secret=from_b64url(raw()),
            files=[ciphertext_file],
            expires_at=timezone.now() + timedelta(hours=1),
        )
    assert not Share.objects.exists()


def test_the_database_holds_the_size_and_the_share_goes_with_it(ciphertext_file, monkeypatch):
    blob = from_b64url(seal_metadata(new_secret(), FILES))
    # Past the model's own check, the CHECK constraint refuses it, and the
    # share made in the same transaction goes too: both or neither.
    monkeypatch.setattr(sealed, "check_wrapped_secret", lambda wrapped: wrapped)
    for size in (64, 66, 0):
        with pytest.raises(IntegrityError):
            create_sealed_share(
                sealed_metadata=blob,
                wrapped_secret=b"\1" * size,
                files=[ciphertext_file],
                expires_at=timezone.now() + timedelta(hours=1),
                password="v",
            )
        assert not Share.objects.exists()
    share = create_sealed_share(
        sealed_metadata=blob, files=[ciphertext_file], expires_at=timezone.now() + timedelta(hours=1)
    )
    with pytest.raises(IntegrityError), transaction.atomic():
        SealedMetadata.objects.filter(share=share).update(wrapped_secret=b"\1" * 64)
    SealedMetadata.objects.filter(share=share).update(wrapped_secret=b"\1" * WRAPPED_SECRET_BYTES)


def test_key_answers_for_links_it_has_nothing_for(alice_client, ciphertext_file):
    assert Client().get("/s/nosuchlink/key").status_code == 404
    plain = create(alice_client, ciphertext_file, password="blue kite").json()["token"]
    not_wrapped = create(alice_client, ciphertext_file, sealed_metadata=seal_metadata(new_secret(), FILES))
    for token in (plain, not_wrapped.json()["token"]):
        response = Client().get(f"/s/{token}/key")
        assert response.status_code == 404
        assert response.content == (
            b"This link has no password-wrapped key: open it with the whole link, the part after # included.\n"
        )
    page = Client().get(f"/s/{plain}/key", headers={"Accept": "text/html"})
    assert page.status_code == 404
    assert b"no password-wrapped key" in page.content


def test_key_answers_410_once_the_link_ended(alice_client, ciphertext_file):
    token, *_ = wrapped_link(alice_client, ciphertext_file)
    Share.objects.filter(token=token).update(expires_at=timezone.now() - timedelta(milliseconds=1))
    response = Client().get(f"/s/{token}/key")
    assert (response.status_code, response.content) == (410, b"This link has expired.\n")
    assert Client().get(f"/s/{token}/sealed").status_code == 410

    unshared, *_ = wrapped_link(alice_client, ciphertext_file)
    alice_client.delete(f"/api/shares/{Share.objects.get(token=unshared).pk}/")
    assert Client().get(f"/s/{unshared}/key").status_code == 410


def test_key_is_rate_limited_like_the_other_link_routes_and_counts_nothing(alice_client, ciphertext_file, settings):
    token, *_ = wrapped_link(alice_client, ciphertext_file)
    settings.LINK_RATE_LIMIT = 3
    client = Client(REMOTE_ADDR="203.0.113.9")
    answers = [client.get(f"/s/{token}/key").status_code for _ in range(5)]
    assert answers[:3] == [200, 200, 200]
    assert answers[3:] == [429, 429]
    refused = client.get(f"/s/{token}/key")
    assert int(refused["Retry-After"]) > 0
    share = Share.objects.get(token=token)
    assert (share.download_count, Download.objects.filter(share=share).count()) == (0, 0)
    assert not ShareEvent.objects.filter(share=share).exclude(kind="created").exists()


ATTACKER, RECIPIENT = "203.0.113.5", "198.51.100.7"


def test_wrong_verifiers_count_like_wrong_passwords(alice_client, ciphertext_file):
    token, _, verifier, _ = wrapped_link(alice_client, ciphertext_file)
    wrong = derive("not the password", os.urandom(16), FAST).verifier
    attacker = Client(REMOTE_ADDR=ATTACKER)
    for n in range(10):
        # Through the header and through the page's form alike.
        if n % 2:
            assert attacker.get(f"/s/{token}/sealed", headers={"X-Share-Password": wrong}).status_code == 403
        else:
            page = attacker.post(f"/s/{token}", {"password": wrong}, headers={"Accept": "text/html"})
            assert page.status_code == 403
            assert "Wrong password. Try again." in page.content.decode()
    refused = attacker.get(f"/s/{token}/sealed", headers={"X-Share-Password": verifier})
    assert refused.status_code == 429
    assert "X-Wrapped-Secret" not in refused
    assert attacker.post(f"/s/{token}", {"password": verifier}).status_code == 429
    # /key is public and checks no password: the throttle does not hide it.
    assert attacker.get(f"/s/{token}/key").status_code == 200
    # The recipient, elsewhere, is not locked out by someone else's guesses.
    allowed = Client(REMOTE_ADDR=RECIPIENT).get(f"/s/{token}/sealed", headers={"X-Share-Password": verifier})
    assert allowed.status_code == 200
    share = Share.objects.get(token=token)
    assert ShareEvent.objects.filter(share=share, kind="wrong_password").count() == 10


# Computed once with hashlib.pbkdf2_hmac and HKDF written out by hand: the
# client's derivation (and, in tests/browser/test_wrapped_links_browser.py,
# the browser's) must give these bytes.
KNOWN_PASSWORD = "Grüße, 7 Brücken"
KNOWN_SALT = bytes(range(1, 17))
KNOWN_ITERATIONS = 100_000
KNOWN_KEY = "0aabc678a5e053141d64ae04285308a3"
KNOWN_VERIFIER = "2LB7qWddCJh-fWXorHxgFg"


def test_the_derivation_gives_the_known_answer():
    derived = derive(KNOWN_PASSWORD, KNOWN_SALT, KNOWN_ITERATIONS)
    assert (derived.key.hex(), derived.verifier) == (KNOWN_KEY, KNOWN_VERIFIER)
    # The password is NFC-normalised: its decomposed spelling is the same password.
    decomposed = unicodedata.normalize("NFD", KNOWN_PASSWORD)
    assert decomposed != KNOWN_PASSWORD
    assert derive(decomposed, KNOWN_SALT, KNOWN_ITERATIONS).verifier == KNOWN_VERIFIER
    assert derive(KNOWN_PASSWORD, KNOWN_SALT, KNOWN_ITERATIONS + 1).verifier != KNOWN_VERIFIER


@pytest.mark.parametrize(
    "parameters",
    [
        {"kdf": "scrypt", "iterations": FAST, "salt": "AQEBAQEBAQEBAQEBAQEBAQ"},
        {"kdf": "PBKDF2-SHA256", "iterations": FAST, "salt": "AQEB"},
        {"kdf": "PBKDF2-SHA256", "iterations": "600000", "salt": "AQEBAQEBAQEBAQEBAQEBAQ"},
        {"kdf": "PBKDF2-SHA256", "iterations": 1_000_000_000, "salt": "AQEBAQEBAQEBAQEBAQEBAQ"},
        {"kdf": "PBKDF2-SHA256", "iterations": 1, "salt": "AQEBAQEBAQEBAQEBAQEBAQ"},
    ],
)
def test_the_client_refuses_key_parameters_it_cannot_or_should_not_use(parameters):
    with pytest.raises(Failure):
        check_parameters(parameters)


def test_a_wrapped_links_password_and_an_encrypted_links_note_are_not_changed_in_plaintext(
    alice_client, ciphertext_file
):
    token, _, verifier, _ = wrapped_link(alice_client, ciphertext_file)
    share = Share.objects.get(token=token)
    url = f"/api/shares/{share.pk}/"
    for password in ("another one", ""):
        refused = alice_client.patch(url, {"password": password}, format="json")
        assert refused.status_code == 400
        assert "unopenable" in refused.json()["password"][0]
    note = alice_client.patch(url, {"message": "Read me", "max_downloads": 5}, format="json")
    assert note.status_code == 400
    assert "inside its sealed metadata" in note.json()["message"][0]
    share.refresh_from_db()
    assert share.check_password(verifier)
    assert share.message == ""
    assert share.max_downloads is None  # nothing of a refused change is kept
    assert alice_client.patch(url, {"max_downloads": 5, "expires_in": 7200}, format="json").status_code == 200


def test_an_encrypted_link_without_a_wrapped_secret_may_take_a_password(alice_client, ciphertext_file):
    # Its key is in the fragment: a password the server checks is one more lock.
    made = create(alice_client, ciphertext_file, sealed_metadata=seal_metadata(new_secret(), FILES))
    url = f"/api/shares/{made.json()['id']}/"
    assert alice_client.patch(url, {"password": "one more lock"}, format="json").status_code == 200
    assert Share.objects.get(pk=made.json()["id"]).check_password("one more lock")
