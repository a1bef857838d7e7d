"""The OpenID Connect settings from the environment (microcloud/oidc_settings.py):
sign-in through the provider is on exactly when OIDC_ISSUER is set, and
LOCAL_LOGIN=false takes the password form off the sign-in page (the admin's
own stays, the break-glass way in)."""

import importlib
from types import SimpleNamespace

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

import microcloud.oidc_settings
from signin.oidc.config import enabled

NAMES = [name for name in microcloud.oidc_settings.__all__ if name != "AUTHENTICATION_BACKENDS"]
NAMES.append("OIDC_CLIENT_SECRET_FILE")


def load(monkeypatch, **env):
    for name in NAMES:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    try:
        loaded = importlib.reload(microcloud.oidc_settings)
        return SimpleNamespace(**{name: getattr(loaded, name) for name in loaded.__all__})
    finally:
        monkeypatch.undo()
        importlib.reload(microcloud.oidc_settings)


def test_it_is_off_without_an_issuer(monkeypatch):
    loaded = load(monkeypatch)
    assert loaded.OIDC_ISSUER == ""
    assert loaded.LOCAL_LOGIN is True
    assert loaded.OIDC_SCOPES == "openid email profile"
    assert loaded.OIDC_USERNAME_CLAIM == "preferred_username"


def test_an_issuer_needs_a_client(monkeypatch):
    with pytest.raises(ImproperlyConfigured, match="OIDC_CLIENT_ID and OIDC_CLIENT_SECRET"):
        load(monkeypatch, OIDC_ISSUER="https://id.example.com/realms/team")
    loaded = load(
        monkeypatch,
        OIDC_ISSUER="https://id.example.com/realms/team",
        OIDC_CLIENT_ID="microcloud",
        OIDC_CLIENT_SECRET="s3cret",
        OIDC_ADMIN_GROUPS="admins, ops",
        OIDC_CREATE_USERS="false",
        LOCAL_LOGIN="false",
    )
    assert loaded.OIDC_ADMIN_GROUPS == ["admins", "ops"]
    assert loaded.OIDC_CREATE_USERS is False
    assert loaded.LOCAL_LOGIN is False


def test_the_client_secret_may_come_from_a_file(monkeypatch, tmp_path):
    secret = tmp_path / "oidc_client_secret"
    secret.write_text("from-the-file\n")
    client = {"OIDC_ISSUER": "https://id.example.com", "OIDC_CLIENT_ID": "c"}
    assert load(monkeypatch, **client, OIDC_CLIENT_SECRET_FILE=str(secret)).OIDC_CLIENT_SECRET == "from-the-file"
    with pytest.raises(ImproperlyConfigured, match=r"OIDC_CLIENT_SECRET_FILE .* cannot be read"):
        load(monkeypatch, **client, OIDC_CLIENT_SECRET_FILE=str(tmp_path / "missing"))


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"OIDC_ISSUER": "id.example.com"}, "OIDC_ISSUER must be an http"),
        ({"OIDC_SCOPES": "email profile"}, "OIDC_SCOPES must include openid"),
        ({"OIDC_SIGN_ALGO": "HS256"}, "OIDC_SIGN_ALGO must be an RS, PS or ES"),
        ({"LOCAL_LOGIN": "perhaps"}, "LOCAL_LOGIN must be a boolean"),
    ],
)
def test_bad_values_stop_the_start(monkeypatch, env, message):
    client = {"OIDC_ISSUER": "https://id.example.com", "OIDC_CLIENT_ID": "c", "OIDC_CLIENT_SECRET": "s"}
    with pytest.raises(ImproperlyConfigured, match=message):
        load(monkeypatch, **{**client, **env})


def test_it_is_on_exactly_when_the_issuer_is_set(settings):
    settings.OIDC_ISSUER = ""
    assert not enabled()
    settings.OIDC_ISSUER = "https://id.example.com"
    assert enabled()


def test_the_sign_in_page_offers_the_provider_only_when_it_is_on(settings, db):
    settings.OIDC_ISSUER = ""
    assert "Sign in with" not in Client().get("/login/").content.decode()
    assert Client().get("/signin/oidc/start/").status_code == 404
    assert Client().get("/signin/oidc/callback/").status_code == 404
    settings.OIDC_ISSUER = "https://id.example.com"
    settings.OIDC_PROVIDER_NAME = "Keycloak"
    page = Client().get("/login/?next=/requests/").content.decode()
    assert '<a class="button" href="/signin/oidc/start/?next=%2Frequests%2F">Sign in with Keycloak</a>' in page
    assert 'name="password"' in page


def test_without_local_login_the_password_form_is_gone_and_refused(settings, alice):
    settings.OIDC_ISSUER = "https://id.example.com"
    settings.LOCAL_LOGIN = False
    page = Client().get("/login/").content.decode()
    assert 'name="password"' not in page
    assert "Sign in with" in page
    client = Client()
    response = client.post("/login/", {"username": "alice", "password": "alice-password-1"})
    assert response.status_code == 403
    assert "Passwords are not taken on this page." in response.content.decode()
    assert client.get("/").status_code == 302


def test_without_local_login_the_admin_still_signs_in_with_a_password(settings, admin_user):
    settings.OIDC_ISSUER = "https://id.example.com"
    settings.LOCAL_LOGIN = False
    client = Client()
    response = client.post("/admin/login/?next=/admin/", {"username": "root", "password": "root-password-1"})
    assert response.status_code == 302
    assert client.get("/admin/").status_code == 200
    # The break-glass session is the site's too.
    assert client.get("/").status_code == 200
