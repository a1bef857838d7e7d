"""The pages in French in a real browser (Chromium asking for fr-FR): the
owner pages and a link's page pass axe-core, the scripts' countdowns and
dates read in French (Intl, in the page's <html lang>), and the switcher
changes the language by clicking, with scripts and without."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from sharing.models import Share
from tests.browser.helpers import axe_check, no_foreign_requests, save_screenshot

PASSWORD = "alice-password-1"  # tests/conftest.py's alice


def share_of(stored, seconds: float = 3600, **options) -> Share:
    return Share.create_for(file=stored, expires_at=timezone.now() + timedelta(seconds=seconds), **options)


@pytest.fixture
def french(anon_context) -> Page:
    """A visitor whose browser asks for French (Accept-Language: fr-FR)."""
    return anon_context(locale="fr-FR", timezone_id="Europe/Paris").new_page()


def sign_in_in_french(page: Page) -> None:
    page.goto("/")
    expect(page.get_by_role("heading", name="Se connecter")).to_be_visible()
    page.get_by_label("Nom d’utilisateur").fill("alice")
    page.get_by_label("Mot de passe").fill(PASSWORD)
    page.get_by_role("button", name="Se connecter").click()
    expect(page.get_by_role("heading", name="Vos fichiers et vos liens")).to_be_visible()


def test_the_owner_pages_in_french_pass_axe(french, alice, shared_file):
    share = share_of(shared_file, seconds=3 * 86400)
    sign_in_in_french(french)
    assert french.evaluate("document.documentElement.lang") == "fr"
    row = french.locator(f'[data-share-id="{share.pk}"]')
    # The countdown in French units (Intl, which puts a no-break space before each), from the page's language.
    expect(row.locator('[data-field="time_left"]')).to_have_text(re.compile(r"^(3\sj 0\sh 0\smin|2\sj 23\sh 59\smin)$"))
    expect(french.get_by_role("button", name="Changer de langue")).to_be_visible()
    axe_check(french)
    save_screenshot(french, "web-dashboard-fr")
    french.goto(f"/shares/{share.pk}/")
    expect(french.get_by_role("heading", name="Lien vers report.txt")).to_be_visible()
    expect(french.get_by_role("heading", name="Prolonger ou raccourcir")).to_be_visible()
    # Dates in the reader's zone, in French: "25 nov. 2026, 18:03:00 UTC+1".
    # The month as \S+: the pattern runs as a JavaScript RegExp, whose \w is
    # ASCII only and so missed "déc." and "févr.".
    expect(french.locator("time.local-time").first).to_have_text(re.compile(r"^\d{1,2} \S+ \d{4}"))
    expect(french.locator("time.local-time").first).not_to_have_text(re.compile("AM|PM|UTC$"))
    axe_check(french)
    no_foreign_requests(french)


def test_a_link_page_in_french_passes_axe(french, shared_file):
    share = share_of(shared_file, max_downloads=2)
    french.goto(f"/s/{share.token}")
    assert french.evaluate("document.documentElement.lang") == "fr"
    expect(french.get_by_text("Partagé avec vous par alice.")).to_be_visible()
    expect(french.get_by_role("link", name="Télécharger")).to_be_visible()
    expect(french.locator(".countdown")).to_have_text(re.compile(r"^(1\sh 0\smin 0\ss|59\smin \d+\ss)$"))
    expect(french.get_by_label("Langue")).to_have_value("fr")
    axe_check(french)
    save_screenshot(french, "link-landing-fr")
    no_foreign_requests(french)


def test_the_password_prompt_in_french_passes_axe(french, shared_file):
    share = share_of(shared_file, password="sésame")
    french.goto(f"/s/{share.token}")
    expect(french.get_by_role("heading", name="Ce lien est protégé par un mot de passe")).to_be_visible()
    french.get_by_label("Mot de passe").fill("pas celui-là")
    french.get_by_role("button", name="Déverrouiller").click()
    expect(french.get_by_role("alert")).to_have_text(
        "Mot de passe incorrect. Réessayez. Il vous reste 9 essais avant une pause."
    )
    axe_check(french)
    french.get_by_label("Mot de passe").fill("sésame")
    french.get_by_role("button", name="Déverrouiller").click()
    expect(french.get_by_role("link", name="Télécharger")).to_be_visible()


def test_the_switcher_changes_the_language_by_clicking(page, shared_file):
    share = share_of(shared_file)
    page.goto(f"/s/{share.token}")
    expect(page.get_by_text("Time left")).to_be_visible()
    assert page.evaluate("document.documentElement.lang") == "en"
    page.get_by_label("Language").select_option("fr")
    page.get_by_role("button", name="Change language").click()
    expect(page.get_by_text("Temps restant")).to_be_visible()
    assert page.url.endswith(f"/s/{share.token}")  # back on the same page
    assert page.evaluate("document.documentElement.lang") == "fr"
    expect(page.locator(".countdown")).to_have_text(re.compile(r"^(1\sh 0\smin 0\ss|59\smin \d+\ss)$"))
    # The choice holds on the other pages, whatever the browser asks for.
    page.goto("/login/")
    expect(page.get_by_role("heading", name="Se connecter")).to_be_visible()
    page.get_by_label("Langue").select_option("en")
    page.get_by_role("button", name="Changer de langue").click()
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    no_foreign_requests(page)


def test_the_switcher_works_without_javascript(page_nojs, shared_file):
    share = share_of(shared_file)
    page_nojs.goto(f"/s/{share.token}")
    page_nojs.get_by_label("Language").select_option("fr")
    page_nojs.get_by_role("button", name="Change language").click()
    expect(page_nojs.get_by_text("Temps restant")).to_be_visible()
    assert page_nojs.url.endswith(f"/s/{share.token}")
    expect(page_nojs.locator("time.local-time")).to_have_text(re.compile(r"UTC$"))  # the server's rendering
    axe_check(page_nojs)
