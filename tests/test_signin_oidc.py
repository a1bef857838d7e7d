"""Sign-in through a real OpenID provider (tests/oidc/provider.mjs, panva's
oidc-provider on 127.0.0.1), driven with Django's test client on our side
and plain HTTP on the provider's: the code flow with PKCE, state and nonce,
every refusal a 4xx page with no session signed in, and the provider's
sign-out."""

from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.contrib.auth import SESSION_KEY, get_user_model
from django.contrib.sessions.models import Session
from django.test import Client

from signin.oidc import discovery
from tests.helpers import free_port
from tests.oidc import CALLBACK_PATH, OidcProvider, provider_answer

PASSWORD = "alice-at-the-provider"


@pytest.fixture(scope="module")
def provider():
    running = OidcProvider(
        redirect_uris=[f"http://testserver{CALLBACK_PATH}"],
        post_logout_redirect_uris=["http://testserver/login/"],
        accounts={"alice": {"password": PASSWORD, "email": "alice@example.com", "groups": ["staff", "admins"]}},
    ).start()
    yield running
    running.stop()


@pytest.fixture
def oidc(settings, provider, db):
    for name, value in provider.settings().items():
        setattr(settings, name, value)
    settings.OIDC_ADMIN_GROUPS = ["admins"]
    discovery.forget()
    provider.set_account("alice", password=PASSWORD, email="alice@example.com", groups=["admins"])
    yield provider
    discovery.forget()


def start(client: Client, next_url: str = "") -> str:
    response = client.get("/signin/oidc/start/" + (f"?next={next_url}" if next_url else ""))
    assert response.status_code == 302, response.content[:300]
    return response["Location"]


def sign_in(client: Client, login: str = "alice", password: str = PASSWORD, **options):
    answer = provider_answer(start(client), login, password, **options)
    assert answer.startswith(f"http://testserver{CALLBACK_PATH}"), answer
    parts = urlsplit(answer)
    return client.get(parts.path, parse_qs(parts.query))


def signed_in_sessions() -> list[str]:
    return [session.session_key for session in Session.objects.all() if SESSION_KEY in session.get_decoded()]


def test_it_signs_in_through_the_provider_and_makes_the_account(oidc):
    client = Client()
    response = sign_in(client)
    assert response.status_code == 302
    assert response["Location"] == "/"
    alice = get_user_model().objects.get(username="alice")
    assert alice.email == "alice@example.com"
    assert not alice.has_usable_password()
    assert alice.is_superuser
    assert alice.is_staff
    assert client.get("/").status_code == 200
    assert client.get("/admin/").status_code == 200


def test_it_asks_with_pkce_state_and_nonce(oidc):
    query = parse_qs(urlsplit(start(Client())).query)
    assert query["response_type"] == ["code"]
    assert query["code_challenge_method"] == ["S256"]
    assert len(query["code_challenge"][0]) >= 43
    assert len(query["state"][0]) >= 32
    assert len(query["nonce"][0]) >= 32
    assert query["scope"] == ["openid email profile groups"]


def test_it_goes_back_to_the_page_asked_for(oidc):
    client = Client()
    answer = provider_answer(start(client, "/requests/"), "alice", PASSWORD)
    parts = urlsplit(answer)
    assert client.get(parts.path, parse_qs(parts.query))["Location"] == "/requests/"


def test_a_user_removed_from_the_admins_group_loses_the_role_at_the_next_sign_in(oidc):
    sign_in(Client())
    oidc.set_account("alice", password=PASSWORD, email="alice@example.com", groups=["users"])
    client = Client()
    assert sign_in(client).status_code == 302
    alice = get_user_model().objects.get(username="alice")
    assert not alice.is_superuser
    assert not alice.is_staff
    assert client.get("/admin/").status_code == 302


def test_a_wrong_password_at_the_provider_never_comes_back(oidc):
    with pytest.raises(AssertionError, match="answered 401"):
        provider_answer(start(Client()), "alice", "not-her-password")


def test_denied_consent_is_a_403_page_and_no_session(oidc):
    response = sign_in(Client(), abort=True)
    assert response.status_code == 403
    assert "The sign-in was declined at the sign-in service." in response.content.decode()
    assert signed_in_sessions() == []


def test_an_answer_to_a_sign_in_not_started_here_is_a_400(oidc):
    answer = provider_answer(start(Client()), "alice", PASSWORD)
    parts = urlsplit(answer)
    stranger = Client()
    response = stranger.get(parts.path, parse_qs(parts.query))
    assert response.status_code == 400
    assert "This sign-in was not started in this browser" in response.content.decode()
    assert signed_in_sessions() == []


def test_an_answer_is_taken_once(oidc):
    client = Client()
    answer = provider_answer(start(client), "alice", PASSWORD)
    parts = urlsplit(answer)
    assert client.get(parts.path, parse_qs(parts.query)).status_code == 302
    assert parse_qs(parts.query)["state"][0] not in client.session.get("oidc_states", {})
    client.logout()
    replayed = client.get(parts.path, parse_qs(parts.query))
    assert replayed.status_code == 400
    assert "This sign-in was not started in this browser" in replayed.content.decode()


def test_a_refused_answer_is_taken_once_too(oidc):
    client = Client()
    state = parse_qs(urlsplit(start(client)).query)["state"][0]
    assert client.get(CALLBACK_PATH, {"state": state, "error": "access_denied"}).status_code == 403
    assert client.get(CALLBACK_PATH, {"state": state, "error": "access_denied"}).status_code == 400


def test_a_providers_error_is_named_only_when_it_is_a_plain_code(oidc):
    client = Client()
    state = parse_qs(urlsplit(start(client)).query)["state"][0]
    page = client.get(CALLBACK_PATH, {"state": state, "error": "Call <b>+1 555</b> now"}).content.decode()
    assert "The sign-in service refused the sign-in (invalid)." in page
    assert "555" not in page.split('<main id="main">')[1]
    state = parse_qs(urlsplit(start(client)).query)["state"][0]
    page = client.get(CALLBACK_PATH, {"state": state, "error": "login_required"}).content.decode()
    assert "The sign-in service refused the sign-in (login_required)." in page


def test_a_session_ends_when_its_account_is_disabled(oidc):
    client = Client()
    sign_in(client)
    assert client.get("/").status_code == 200
    get_user_model().objects.filter(username="alice").update(is_active=False)
    assert client.get("/")["Location"].startswith("/login/")


def test_the_discovery_document_is_kept_an_hour(oidc):
    first = discovery.document(clock=lambda: 1000.0)
    assert discovery.document(clock=lambda: 1000.0 + discovery.KEEP_SECONDS - 1) is first
    assert discovery.document(clock=lambda: 1000.0 + discovery.KEEP_SECONDS) is not first


def test_a_discovery_document_of_another_issuer_is_refused(oidc, settings):
    settings.OIDC_ISSUER = oidc.issuer + "/"
    response = Client().get("/signin/oidc/start/")
    assert response.status_code == 424


def test_a_callback_without_its_code_is_a_400(oidc):
    client = Client()
    state = parse_qs(urlsplit(start(client)).query)["state"][0]
    assert client.get(CALLBACK_PATH, {"state": state}).status_code == 400


@pytest.mark.parametrize(
    ("tamper", "reason"),
    [
        ("signature", "is not signed by its keys"),
        ("hs256", "is not signed by its keys"),
        ("audience", "was made for another application"),
        ("audiences", "was made for another application"),
        ("issuer", "comes from another issuer"),
        ("nonce", "belongs to another sign-in"),
        ("expired", "has expired"),
        ("no-expiry", "could not be read"),
        ("userinfo", "disagree about who you are"),
    ],
)
def test_a_tampered_id_token_is_refused_with_no_session(oidc, tamper, reason):
    oidc.set_account("alice", password=PASSWORD, email="alice@example.com", groups=["admins"], tamper=tamper)
    response = sign_in(Client())
    assert response.status_code == 403
    assert reason in response.content.decode()
    assert signed_in_sessions() == []
    assert not get_user_model().objects.filter(username="alice").exists()


def test_only_existing_accounts_sign_in_when_creating_is_off(oidc, settings):
    settings.OIDC_CREATE_USERS = False
    response = sign_in(Client())
    assert response.status_code == 403
    assert "There is no account here for alice" in response.content.decode()
    get_user_model().objects.create_user("alice")
    assert sign_in(Client()).status_code == 302


def test_a_disabled_account_is_refused(oidc):
    get_user_model().objects.create_user("alice", is_active=False)
    response = sign_in(Client())
    assert response.status_code == 403
    assert "This account is disabled here." in response.content.decode()
    assert signed_in_sessions() == []


def test_the_provider_down_at_the_start_is_a_424_page(oidc, settings):
    settings.OIDC_ISSUER = f"http://127.0.0.1:{free_port()}"
    response = Client().get("/signin/oidc/start/")
    assert response.status_code == 424
    assert "The sign-in service cannot be reached right now." in response.content.decode()


def test_the_provider_down_at_the_callback_is_a_424_page(settings, db):
    # A provider of this test's own, stopped between its answer and the code's exchange.
    gone = OidcProvider(
        redirect_uris=[f"http://testserver{CALLBACK_PATH}"], accounts={"alice": {"password": PASSWORD}}
    ).start()
    try:
        for name, value in gone.settings().items():
            setattr(settings, name, value)
        discovery.forget()
        client = Client()
        answer = provider_answer(start(client), "alice", PASSWORD)
    finally:
        gone.stop()
    parts = urlsplit(answer)
    response = client.get(parts.path, parse_qs(parts.query))
    assert response.status_code == 424
    assert signed_in_sessions() == []
    discovery.forget()


def test_a_password_post_carrying_a_code_never_reaches_the_provider(oidc, alice):
    # The provider's backend sits beside the password one: a log-in form
    # posted to a URL with code and state must not become a token exchange.
    response = Client().post("/login/?code=x&state=y", {"username": "alice", "password": "wrong"})
    assert response.status_code == 200


def test_a_local_account_signs_out_as_before(oidc, alice):
    client = Client()
    client.force_login(alice)
    response = client.post("/logout/")
    assert response.status_code == 302
    assert response["Location"] == "/login/"


def test_sign_out_ends_the_session_and_offers_the_providers(oidc):
    client = Client()
    sign_in(client)
    response = client.post("/logout/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "Sign out of Test Provider too" in page
    end_session = requests.get(oidc.discovery_url, timeout=5).json()["end_session_endpoint"]
    link = next(part for part in page.split('"') if part.startswith(end_session))
    query = parse_qs(urlsplit(link.replace("&amp;", "&")).query)
    assert query["post_logout_redirect_uri"] == ["http://testserver/login/"]
    assert query["id_token_hint"][0].count(".") == 2
    assert signed_in_sessions() == []
    assert client.get("/")["Location"].startswith("/login/")


def test_a_code_the_provider_will_not_exchange_is_a_400(oidc):
    client = Client()
    used = parse_qs(urlsplit(provider_answer(start(client), "alice", PASSWORD)).query)
    assert client.get(CALLBACK_PATH, used).status_code == 302
    client.logout()
    # A fresh sign-in's state with the code already exchanged: the provider says invalid_grant.
    state = parse_qs(urlsplit(start(client)).query)["state"][0]
    response = client.get(CALLBACK_PATH, {"state": state, "code": used["code"][0]})
    assert response.status_code == 400
    assert "The sign-in service would not finish this sign-in." in response.content.decode()
    assert signed_in_sessions() == []
