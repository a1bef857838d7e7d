"""The second factor in Chromium: setting up an authenticator app from its
QR code's key, the recovery codes shown once, then a sign-in with the code
after the password (pyotp computes each code, as the app would); an admin
who must have one is sent to set it up; every page passes axe-core at a
desktop's and a phone's width, in English and in French."""

from datetime import timedelta

import pyotp
import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from signin import totp
from tests.browser.helpers import axe_check, no_foreign_requests, save_screenshot, submit_admin_login

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
PASSWORD = "alice-password-1"  # tests/conftest.py's alice

WORDS = {
    "en": {
        "log_in": "Log in",
        "username": "Username",
        "password": "Password",
        "second_factor": "Second factor",
        "app_code": "Code from the app",
        "set_up": "Set up",
        "recovery": "Recovery codes",
        "continue": "Continue",
        "code": "Code",
        "log_out": "Log out",
        "dashboard": "Your files and links",
        "turn_off": "Turn off the second factor",
    },
    "fr": {
        "log_in": "Se connecter",
        "username": "Nom d’utilisateur",
        "password": "Mot de passe",
        "second_factor": "Second facteur",
        "app_code": "Code de l’application",
        "set_up": "Configurer",
        "recovery": "Codes de secours",
        "continue": "Continuer",
        "code": "Code",
        "log_out": "Se déconnecter",
        "dashboard": "Vos fichiers et vos liens",
        "turn_off": "Désactiver le second facteur",
    },
}


def fits_the_width(page: Page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0


def checked(page: Page, name: str | None = None) -> None:
    fits_the_width(page)
    axe_check(page)
    if name:
        save_screenshot(page, name)


def password_in(page: Page, words: dict, username: str, password: str) -> None:
    page.goto("/login/")
    page.get_by_label(words["username"]).fill(username)
    page.get_by_label(words["password"]).fill(password)
    page.get_by_role("button", name=words["log_in"]).click()


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
@pytest.mark.parametrize("lang", ["en", "fr"])
def test_set_up_an_app_then_sign_in_with_its_code(anon_context, alice, viewport, lang):
    words = WORDS[lang]
    page = anon_context(viewport=viewport, locale="fr-FR" if lang == "fr" else "en-US").new_page()
    password_in(page, words, "alice", PASSWORD)
    expect(page.get_by_role("heading", name=words["dashboard"])).to_be_visible()
    page.get_by_role("link", name=words["second_factor"]).click()
    expect(page.get_by_role("heading", name=words["second_factor"])).to_be_visible()
    expect(page.locator("svg.qr-code")).to_be_visible()
    checked(page, f"signin-set-up-{lang}" if viewport == DESKTOP else None)
    key = "".join(page.locator("code.token").inner_text().split())
    app = pyotp.TOTP(key)
    # The previous step's code (accepted within the drift), so the current one is left for the sign-in.
    page.get_by_label(words["app_code"]).fill(app.at(timezone.now() - timedelta(seconds=30)))
    page.get_by_role("button", name=words["set_up"], exact=True).click()
    expect(page.get_by_role("heading", name=words["recovery"])).to_be_visible()
    expect(page.locator(".recovery-codes li")).to_have_count(10)
    checked(page)
    page.get_by_role("link", name=words["continue"]).click()
    expect(page.get_by_role("heading", name=words["dashboard"])).to_be_visible()
    page.get_by_role("button", name=words["log_out"]).click()

    password_in(page, words, "alice", PASSWORD)
    expect(page.get_by_role("heading", name=words["second_factor"])).to_be_visible()
    page.get_by_label(words["code"]).fill("000000")
    page.get_by_role("button", name=words["continue"]).click()
    expect(page.get_by_role("alert")).to_be_visible()
    checked(page, f"signin-code-{lang}" if viewport == DESKTOP else None)
    page.get_by_label(words["code"]).fill(app.now())
    page.get_by_role("button", name=words["continue"]).click()
    expect(page.get_by_role("heading", name=words["dashboard"])).to_be_visible()
    page.get_by_role("link", name=words["second_factor"]).click()
    expect(page.get_by_role("button", name=words["turn_off"])).to_be_visible()  # set up: it may be turned off
    checked(page)
    no_foreign_requests(page)


def test_an_admin_who_must_have_one_sets_it_up_before_the_admin(anon_context, admin_user, settings):
    settings.TOTP_REQUIRED_FOR_STAFF = True
    page = anon_context().new_page()
    submit_admin_login(page, admin_user, "root-password-1")
    expect(page.get_by_role("heading", name="Second factor")).to_be_visible()
    expect(page.get_by_text("Staff accounts here sign in with a code")).to_be_visible()
    checked(page)
    key = "".join(page.locator("code.token").inner_text().split())
    page.get_by_label("Code from the app").fill(pyotp.TOTP(key).now())
    page.get_by_role("button", name="Set up", exact=True).click()
    page.get_by_role("link", name="Continue").click()
    expect(page.get_by_role("heading", name="Site administration")).to_be_visible()
    assert totp.has_device(admin_user)
