"""The second factor of local accounts: a TOTP code (computed here with
pyotp, as an authenticator app does) after the password, recovery codes
that work once, required for staff by TOTP_REQUIRED_FOR_STAFF, the admin
behind it, the API's tokens untouched."""

from datetime import timedelta

import pyotp
import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from signin import recovery, totp
from signin.models import RecoveryCode, TotpDevice
from tokens import service

pytestmark = pytest.mark.django_db

ALICE_PASSWORD = "alice-password-1"
ROOT_PASSWORD = "root-password-1"


def with_app(user) -> tuple[pyotp.TOTP, list[str]]:
    """Set up an authenticator app for `user` as the set-up page does; return the app and the recovery codes."""
    secret = totp.new_secret()
    app = pyotp.TOTP(secret)
    # The code of the step before, so that the current one is still unused.
    codes = totp.set_up(user, secret, app.at(timezone.now() - timedelta(seconds=30)))
    assert codes is not None
    return app, codes


def password_in(username: str, password: str, *, at: str = "/login/") -> Client:
    client = Client()
    response = client.post(at, {"username": username, "password": password})
    assert response.status_code == 302, response.content
    return client


def test_a_user_with_an_app_gives_its_code_after_the_password(alice):
    app, _codes = with_app(alice)
    client = password_in("alice", ALICE_PASSWORD)
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"] == "/login/code/?next=%2F"
    page = client.get(response["Location"])
    assert page.status_code == 200
    assert b'autocomplete="one-time-code"' in page.content
    done = client.post("/login/code/", {"code": app.now(), "next": "/"})
    assert done.status_code == 302
    assert done["Location"] == "/"
    assert client.get("/").status_code == 200


def test_every_page_but_the_code_page_waits_for_the_code(alice):
    with_app(alice)
    client = password_in("alice", ALICE_PASSWORD)
    # Setting up another app too: the password alone must not replace the one asked for.
    for path in ("/", "/account/token/", "/account/password/", "/requests/", "/admin/", "/account/second-factor/"):
        assert client.get(path)["Location"].startswith("/login/code/"), path
    assert client.post("/logout/").status_code == 302  # the way out stays open


def test_a_wrong_code_is_a_400_saying_so_and_how_many_tries_are_left(alice):
    app, _codes = with_app(alice)
    client = password_in("alice", ALICE_PASSWORD)
    wrong = f"{(int(app.now()) + 1) % 1000000:06d}"
    response = client.post("/login/code/", {"code": wrong})
    assert response.status_code == 400
    assert b"That code is not right" in response.content
    assert b"tries left" in response.content or b"try left" in response.content
    assert client.post("/login/code/", {"code": ""}).status_code == 400
    assert client.get("/")["Location"].startswith("/login/code/")


def test_wrong_codes_are_rate_limited_as_failed_log_ins(alice, settings):
    settings.LOGIN_FAILURES_PER_USERNAME_AND_ADDRESS = 12  # the password's own try is taken back
    app, _codes = with_app(alice)
    client = password_in("alice", ALICE_PASSWORD)
    answers = [client.post("/login/code/", {"code": "000000"}).status_code for _ in range(12)]
    assert answers == [400] * 12
    refused = client.post("/login/code/", {"code": app.now()})  # even the right code, now
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) >= 1
    assert b"Too many" in refused.content
    assert client.get("/")["Location"].startswith("/login/code/")


def test_a_code_works_once(alice):
    app, _codes = with_app(alice)
    code = app.now()
    first = password_in("alice", ALICE_PASSWORD)
    assert first.post("/login/code/", {"code": code}).status_code == 302
    second = password_in("alice", ALICE_PASSWORD)
    assert second.post("/login/code/", {"code": code}).status_code == 400


def test_a_code_is_accepted_once_and_an_older_one_never_after_it(alice):
    app, _codes = with_app(alice)
    now = timezone.now()
    assert totp.accept_code(alice, app.at(now), now=now)
    assert not totp.accept_code(alice, app.at(now), now=now)
    assert not totp.accept_code(alice, app.at(now - timedelta(seconds=30)), now=now)
    assert totp.accept_code(alice, app.at(now + timedelta(seconds=30)), now=now)


def test_a_code_from_a_step_off_is_accepted_two_steps_off_is_not(alice):
    app, _codes = with_app(alice)
    now = timezone.now()
    assert not totp.accept_code(alice, app.at(now + timedelta(seconds=90)), now=now)
    assert totp.accept_code(alice, app.at(now + timedelta(seconds=30)), now=now)


def test_a_recovery_code_works_once(alice):
    _app, codes = with_app(alice)
    assert len(codes) == 10
    assert RecoveryCode.objects.filter(user=alice).count() == 10
    assert not RecoveryCode.objects.filter(digest__in=codes).exists()  # digests only
    first = password_in("alice", ALICE_PASSWORD)
    assert first.post("/login/code/", {"code": codes[0].upper()}).status_code == 302
    again = password_in("alice", ALICE_PASSWORD)
    assert again.post("/login/code/", {"code": codes[0]}).status_code == 400
    assert again.post("/login/code/", {"code": codes[1]}).status_code == 302
    assert recovery.codes_left(alice) == 8


def test_setting_up_again_replaces_the_app_and_the_codes(alice):
    old_app, old_codes = with_app(alice)
    new_app, _new_codes = with_app(alice)
    assert TotpDevice.objects.filter(user=alice).count() == 1
    assert not recovery.use_code(alice, old_codes[2])
    assert not totp.accept_code(alice, old_app.now()) or old_app.secret == new_app.secret


def test_set_up_through_the_page_shows_the_codes_once(alice, alice_web):
    page = alice_web.get("/account/second-factor/")
    assert page.status_code == 200
    assert b"<svg" in page.content
    secret = alice_web.session["signin.new_secret"]
    assert alice_web.post("/account/second-factor/", {"code": "123"}).status_code == 400
    done = alice_web.post("/account/second-factor/", {"code": pyotp.TOTP(secret).now()})
    assert done.status_code == 200
    codes = done.context["codes"]
    assert len(codes) == 10
    assert all(code.encode() in done.content for code in codes)
    assert TotpDevice.objects.get(user=alice).secret == secret
    assert alice_web.get("/").status_code == 200  # this session gave its code
    assert codes[0].encode() not in alice_web.get("/account/second-factor/").content


def test_turning_it_off(alice):
    app, _codes = with_app(alice)
    client = password_in("alice", ALICE_PASSWORD)
    client.post("/login/code/", {"code": app.now()})
    assert client.post("/account/second-factor/", {"turn_off": "1"}).status_code == 302
    assert not TotpDevice.objects.filter(user=alice).exists()
    assert not RecoveryCode.objects.filter(user=alice).exists()
    assert password_in("alice", ALICE_PASSWORD).get("/").status_code == 200


def test_next_goes_nowhere_else(alice):
    app, _codes = with_app(alice)
    client = password_in("alice", ALICE_PASSWORD)
    response = client.post("/login/code/", {"code": app.now(), "next": "https://elsewhere.example/"})
    assert response["Location"] == "/"


class TestRequiredForStaff:
    @pytest.fixture(autouse=True)
    def required(self, settings):
        settings.TOTP_REQUIRED_FOR_STAFF = True

    def test_an_admin_without_an_app_cannot_reach_the_admin_and_is_sent_to_set_one_up(self, admin_user):
        client = password_in("root", ROOT_PASSWORD, at="/admin/login/")
        for path in ("/admin/", "/admin/auth/user/", "/admin/login/", "/"):
            response = client.get(path)
            assert response.status_code == 302
            assert response["Location"].startswith("/account/second-factor/?next="), path
        page = client.get("/account/second-factor/?next=/admin/")
        assert b"Staff accounts here sign in with a code" in page.content
        turn_off = client.post("/account/second-factor/", {"turn_off": "1"})
        assert turn_off.status_code == 403
        secret = client.session["signin.new_secret"]
        done = client.post("/account/second-factor/", {"code": pyotp.TOTP(secret).now(), "next": "/admin/"})
        assert done.status_code == 200
        assert b'href="/admin/"' in done.content
        assert client.get("/admin/").status_code == 200

    def test_an_admin_with_an_app_gives_the_code_after_the_admins_own_log_in(self, admin_user):
        app, _codes = with_app(admin_user)
        client = password_in("root", ROOT_PASSWORD, at="/admin/login/")
        response = client.get("/admin/")
        assert response["Location"] == "/login/code/?next=%2Fadmin%2F"
        done = client.post("/login/code/", {"code": app.now(), "next": "/admin/"})
        assert done["Location"] == "/admin/"
        assert client.get("/admin/").status_code == 200

    def test_the_api_takes_tokens_but_not_a_session_still_owing_its_code(self, admin_user):
        _token, key = service.issue(admin_user, name="script")
        assert APIClient().get("/api/files/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200
        client = password_in("root", ROOT_PASSWORD, at="/admin/login/")
        assert client.get("/api/files/").status_code in (401, 403)

    def test_not_staff_need_nothing(self, alice):
        assert password_in("alice", ALICE_PASSWORD).get("/").status_code == 200

    def test_a_staff_session_from_the_trusted_proxy_is_not_local(self, admin_user, settings):
        settings.TRUSTED_PROXY_HEADER = "Remote-User"
        settings.TRUSTED_PROXY_ADDRESSES = ["127.0.0.1/32"]
        response = Client().get("/admin/", HTTP_REMOTE_USER="root", REMOTE_ADDR="127.0.0.1")
        assert response.status_code == 200


def test_without_the_setting_staff_choose(admin_user, settings):
    assert settings.TOTP_REQUIRED_FOR_STAFF is False
    client = password_in("root", ROOT_PASSWORD, at="/admin/login/")
    assert client.get("/admin/").status_code == 200


def test_the_session_gets_a_new_key_when_the_code_is_given(alice):
    app, _codes = with_app(alice)
    client = password_in("alice", ALICE_PASSWORD)
    before = client.session.session_key
    client.post("/login/code/", {"code": app.now()})
    assert client.session.session_key != before


class TestTheTokenEndpoint:
    """POST /api/auth/token/: a password alone is no way around the second factor."""

    def test_a_user_with_an_app_sends_its_code(self, alice):
        app, codes = with_app(alice)
        api = APIClient()
        refused = api.post("/api/auth/token/", {"username": "alice", "password": ALICE_PASSWORD}, format="json")
        assert refused.status_code == 400
        assert "second factor" in refused.json()["code"][0]
        wrong = api.post(
            "/api/auth/token/", {"username": "alice", "password": ALICE_PASSWORD, "code": "000000"}, format="json"
        )
        assert wrong.status_code == 400
        right = api.post(
            "/api/auth/token/", {"username": "alice", "password": ALICE_PASSWORD, "code": app.now()}, format="json"
        )
        assert right.status_code == 200
        key = right.json()["token"]
        assert api.get("/api/files/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200
        by_recovery = api.post(
            "/api/auth/token/", {"username": "alice", "password": ALICE_PASSWORD, "code": codes[0]}, format="json"
        )
        assert by_recovery.status_code == 200

    def test_wrong_codes_count_as_failed_log_ins(self, alice, settings):
        settings.LOGIN_FAILURES_PER_USERNAME_AND_ADDRESS = 3
        with_app(alice)
        body = {"username": "alice", "password": ALICE_PASSWORD, "code": "000000"}
        answers = [APIClient().post("/api/auth/token/", body, format="json").status_code for _ in range(4)]
        assert answers == [400, 400, 400, 429]

    def test_staff_who_must_have_one_and_have_none_get_no_token(self, admin_user, settings):
        settings.TOTP_REQUIRED_FOR_STAFF = True
        body = {"username": "root", "password": ROOT_PASSWORD}
        assert APIClient().post("/api/auth/token/", body, format="json").status_code == 400

    def test_a_user_without_one_needs_only_the_password(self, alice):
        body = {"username": "alice", "password": ALICE_PASSWORD}
        assert APIClient().post("/api/auth/token/", body, format="json").status_code == 200
