"""Sign-in through a real OpenID provider in Chromium: the "Sign in with"
button, the provider's own login page (tests/oidc/provider.mjs, panva's
oidc-provider), back signed in; the admins group reaching the admin and
losing it with the group; tampered ID tokens refused with a clear page and
no session; the provider's sign-out; axe-core on the new pages at desktop
and phone widths, in English and in French."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from django.contrib.auth import SESSION_KEY, get_user_model
from django.contrib.sessions.models import Session
from playwright.sync_api import Page, expect

from signin.oidc import discovery
from tests.browser.helpers import axe_check, save_screenshot
from tests.browser.network import origin_of, watch
from tests.oidc import CALLBACK_PATH, OidcProvider

PASSWORD = "alice-at-the-provider"
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def provider(live_server):
    running = OidcProvider(
        redirect_uris=[live_server.url + CALLBACK_PATH],
        post_logout_redirect_uris=[live_server.url + "/login/"],
        accounts={"alice": {"password": PASSWORD, "email": "alice@example.com", "groups": ["admins"]}},
    ).start()
    yield running
    running.stop()


@pytest.fixture
def oidc(settings, provider, transactional_db):
    for name, value in provider.settings().items():
        setattr(settings, name, value)
    settings.OIDC_ADMIN_GROUPS = ["admins"]
    discovery.forget()
    provider.set_account("alice", password=PASSWORD, email="alice@example.com", groups=["admins"])
    yield provider
    discovery.forget()


@pytest.fixture
def visitor(browser, live_server, provider):
    """Make browser contexts on the live server that may also visit the
    provider: the request rules of tests/browser/network.py hold for every
    other origin, and 5xx and broken static files are refused everywhere."""
    made = []

    def make(**options):
        context = browser.new_context(base_url=live_server.url, **options)
        made.append((context, watch(context, live_server.url)))
        return context.new_page()

    yield make
    provider_origin = origin_of(provider.issuer)
    problems = []
    for context, log in made:
        context.close()
        problems += log.broken
        problems += [f"request to another origin: {url}" for url in log.foreign() if origin_of(url) != provider_origin]
    assert not problems, "the browser broke the request rules:\n  " + "\n  ".join(problems)


def sign_in_at_the_provider(page: Page, button: str = "Sign in with Test Provider") -> None:
    page.get_by_role("link", name=button).click()
    expect(page.get_by_role("heading", name="Sign in to the test provider")).to_be_visible()
    page.get_by_label("Login").fill("alice")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()


def signed_in_sessions() -> list[str]:
    return [session.session_key for session in Session.objects.all() if SESSION_KEY in session.get_decoded()]


def path_of(page: Page) -> str:
    return urlsplit(page.url).path


def test_sign_in_with_the_provider_then_the_admins_group_comes_and_goes(oidc, visitor):
    page = visitor()
    page.goto("/")
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    sign_in_at_the_provider(page)
    expect(page.get_by_role("heading", name="Your files and links")).to_be_visible()
    assert path_of(page) == "/"
    page.goto("/admin/")
    expect(page.get_by_role("heading", name="Site administration")).to_be_visible()

    # Signing out here, then at the provider, which sends the browser back.
    page.goto("/")
    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_role("heading", name="Signed out")).to_be_visible()
    assert signed_in_sessions() == []
    page.get_by_role("link", name="Sign out of Test Provider too").click()
    page.get_by_role("button", name="Yes, sign me out").click()
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    assert path_of(page) == "/login/"

    # Out of the admins group at the provider: the next sign-in takes the role away.
    oidc.set_account("alice", password=PASSWORD, email="alice@example.com", groups=["users"])
    sign_in_at_the_provider(page)
    expect(page.get_by_role("heading", name="Your files and links")).to_be_visible()
    page.goto("/admin/")
    assert path_of(page) == "/admin/login/"
    alice = get_user_model().objects.get(username="alice")
    assert not alice.is_superuser
    assert not alice.is_staff


@pytest.mark.parametrize(
    ("tamper", "reason"),
    [
        ("signature", "The sign-in service's answer is not signed by its keys."),
        ("audience", "The sign-in service's answer was made for another application."),
        ("nonce", "The sign-in service's answer belongs to another sign-in. Start again."),
        ("expired", "The sign-in service's answer has expired. Start again."),
    ],
)
def test_a_tampered_id_token_is_refused_with_a_clear_page(oidc, visitor, tamper, reason):
    oidc.set_account("alice", password=PASSWORD, email="alice@example.com", groups=["admins"], tamper=tamper)
    page = visitor()
    page.goto("/login/")
    with page.expect_response(lambda response: CALLBACK_PATH in response.url) as answer:
        sign_in_at_the_provider(page)
    assert answer.value.status == 403
    expect(page.get_by_role("heading", name="Sign-in refused")).to_be_visible()
    expect(page.get_by_role("alert")).to_have_text(reason)
    assert signed_in_sessions() == []
    page.get_by_role("link", name="Back to the sign-in page").click()
    page.goto("/")
    assert path_of(page) == "/login/"


def test_declining_at_the_provider_is_a_clear_page(oidc, visitor):
    page = visitor()
    page.goto("/login/")
    page.get_by_role("link", name="Sign in with Test Provider").click()
    with page.expect_response(lambda response: CALLBACK_PATH in response.url) as answer:
        page.get_by_role("link", name="Cancel").click()
    assert answer.value.status == 403
    expect(page.get_by_role("alert")).to_have_text("The sign-in was declined at the sign-in service.")
    assert signed_in_sessions() == []


@pytest.mark.parametrize("viewport", [None, PHONE], ids=["desktop", "phone"])
@pytest.mark.parametrize("locale", ["en-GB", "fr-FR"])
def test_the_new_pages_pass_axe(oidc, visitor, viewport, locale):
    french = locale == "fr-FR"
    page = visitor(locale=locale, **({"viewport": viewport} if viewport else {}))
    page.goto("/login/")
    button = "Se connecter avec Test Provider" if french else "Sign in with Test Provider"
    expect(page.get_by_role("link", name=button)).to_be_visible()
    axe_check(page)
    if not french:
        save_screenshot(page, "signin-oidc-login" + ("-phone" if viewport else ""))

    # A refusal: an answer to a sign-in this browser never started.
    page.goto(f"{CALLBACK_PATH}?state=forged&code=forged")
    expect(
        page.get_by_role(
            "heading", name="Cette connexion ne peut pas continuer" if french else "This sign-in cannot go on"
        )
    ).to_be_visible()
    axe_check(page)

    page.goto("/login/")
    sign_in_at_the_provider(page, button)
    page.get_by_role("button", name="Se déconnecter" if french else "Log out").click()
    expect(page.get_by_role("heading", name="Déconnecté" if french else "Signed out")).to_be_visible()
    axe_check(page)
    if not french:
        save_screenshot(page, "signin-oidc-signed-out" + ("-phone" if viewport else ""))


def test_without_local_login_the_page_offers_only_the_provider(oidc, visitor, settings):
    settings.LOCAL_LOGIN = False
    page = visitor()
    page.goto("/login/")
    expect(page.get_by_role("link", name="Sign in with Test Provider")).to_be_visible()
    expect(page.get_by_label("Password")).to_have_count(0)
    axe_check(page)
