"""Ended links, lockouts and delivery receipts in Chromium, at a desktop's
1280 px and a phone's 390 px, in English and in French, each page held to
axe-core:

- an ended link's Manage page says what happened in a sentence, offers no
  Copy button and no QR code, and reactivates it (a new lifetime, downloads
  from zero), after which Copy and the QR code are back;
- the dashboard's "Time left" of an unshared link says so (not "expired"),
  and its row's Reactivate brings the link back;
- the recipient of a used-up link reads one plain sentence, no bytes;
- each download in a link's history says how far its recipient got, and the
  dashboard how many times the file arrived whole;
- an upload request's lockout page has a short heading and its explanation
  below it.

With SAVE_SCREENSHOTS=1 each page is saved to docs/screenshots/ as
ended-<page>-<language>-<width>.png.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from collect.models import UploadRequest
from sharing.models import Share
from sharing.models.downloads import Sending
from tests.browser.helpers import axe_check, no_foreign_requests, save_screenshot
from tests.browser.test_web_browser import PASSWORD

WIDTHS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}

# The words each language's reader sees, written out here, not read from the code.
WORDS = {
    "en": {
        "locale": "en-US",
        "heading": "Log in",
        "username": "Username",
        "password": "Password",
        "log_in": "Log in",
        "dashboard": "Your files and links",
        "owner_limit": "This link has been downloaded as many times as you allowed.",
        "recipient_limit": "This link has been downloaded as many times as its sender allowed.",
        "time_left_limit": "Downloaded as often as allowed",
        "time_left_unshared": "Unshared",
        "reactivate": "Reactivate",
        "reactivate_link": "Reactivate the link",
        "reset": "Count downloads from zero again",
        "reactivated": "The link works again, at the same address.",
        "copy": "Copy",
        "active": "Active",
        "stopped": "stopped at 30 %",
        "completed": "completed",
        "in_full": "received in full",
        "in_full_times": "downloaded in full 2 times",
        "too_many": "Too many wrong passwords",
        "unlock": "Unlock",
        "try_again": "Try again in",
    },
    "fr": {
        "locale": "fr-FR",
        "heading": "Se connecter",
        "username": "Nom d’utilisateur",
        "password": "Mot de passe",
        "log_in": "Se connecter",
        "dashboard": "Vos fichiers et vos liens",
        "owner_limit": "Ce lien a été téléchargé autant de fois que vous l’avez permis.",
        "recipient_limit": "Ce lien a été téléchargé autant de fois que son expéditeur l’a permis.",
        "time_left_limit": "Téléchargé autant que permis",
        "time_left_unshared": "Partage arrêté",
        "reactivate": "Réactiver",
        "reactivate_link": "Réactiver le lien",
        "reset": "Recompter les téléchargements à partir de zéro",
        "reactivated": "Le lien fonctionne de nouveau, à la même adresse.",
        "copy": "Copier",
        "active": "Actif",
        "stopped": "arrêté à 30 %",
        "completed": "terminé",
        "in_full": "reçu en entier",
        "in_full_times": "téléchargé en entier 2 fois",
        "too_many": "Trop de mots de passe incorrects",
        "unlock": "Déverrouiller",
        "try_again": "Réessayez dans",
    },
}

CASES = [(width, language) for language in WORDS for width in WIDTHS]
IDS = [f"{language}-{width}" for width, language in CASES]


def browser_page(anon_context, width: str, language: str) -> Page:
    return anon_context(viewport=WIDTHS[width], locale=WORDS[language]["locale"], timezone_id="Europe/Paris").new_page()


def sign_in(page: Page, words: dict) -> None:
    page.goto("/")
    expect(page.get_by_role("heading", name=words["heading"])).to_be_visible()
    page.get_by_label(words["username"]).fill("alice")
    page.get_by_label(words["password"]).fill(PASSWORD)
    page.get_by_role("button", name=words["log_in"]).click()
    expect(page.get_by_role("heading", name=words["dashboard"])).to_be_visible()
    page.wait_for_load_state()


def share_of(stored, **options) -> Share:
    return Share.create_for(file=stored, expires_at=timezone.now() + timedelta(hours=1), **options)


def used_up(stored) -> Share:
    share = share_of(stored, max_downloads=1)
    assert share.count_download()
    return share


def row_of(page: Page, share: Share):
    return page.locator(f'[data-share-id="{share.pk}"]')


@pytest.mark.parametrize(("width", "language"), CASES, ids=IDS)
def test_an_ended_links_manage_page_offers_no_copy_nor_qr_and_reactivates_it(
    anon_context, alice, shared_file, width, language
):
    words = WORDS[language]
    share = used_up(shared_file)
    page = browser_page(anon_context, width, language)
    sign_in(page, words)
    page.goto(f"/shares/{share.pk}/")
    expect(page.get_by_text(words["owner_limit"])).to_be_visible()
    expect(page.locator('[data-field="time_left"]')).to_have_text(words["time_left_limit"])
    expect(page.get_by_role("button", name=words["copy"], exact=True)).to_have_count(0)
    expect(page.locator(".qr")).to_have_count(0)
    expect(page.get_by_label(words["reset"])).to_be_checked()
    axe_check(page)
    save_screenshot(page, f"ended-manage-{language}-{width}")

    page.get_by_role("button", name=words["reactivate_link"]).click()
    expect(page.get_by_text(words["reactivated"])).to_be_visible()
    expect(page.get_by_role("button", name=words["copy"], exact=True)).to_be_visible()
    expect(page.locator(".qr svg")).to_be_visible()
    expect(page.locator('[data-field="status_label"]')).to_have_text(words["active"])
    share.refresh_from_db()
    assert share.is_servable()
    assert share.download_count == 0
    axe_check(page)
    no_foreign_requests(page)


@pytest.mark.parametrize(("width", "language"), CASES, ids=IDS)
def test_an_unshared_rows_time_left_says_so_and_its_reactivate_brings_it_back(
    anon_context, alice, shared_file, width, language
):
    words = WORDS[language]
    share = share_of(shared_file)
    share.unshare()
    page = browser_page(anon_context, width, language)
    sign_in(page, words)
    page.goto("/?status=all")
    row = row_of(page, share)
    expect(row.locator('[data-field="time_left"]')).to_have_text(words["time_left_unshared"])
    expect(row.get_by_role("button", name=re.compile(f"^{words['copy']}"))).to_have_count(0)
    axe_check(page)
    save_screenshot(page, f"ended-dashboard-{language}-{width}")

    row.get_by_role("button", name=re.compile(f"^{words['reactivate']}")).click()
    expect(page.get_by_text(words["reactivated"])).to_be_visible()
    expect(row_of(page, share).locator('[data-field="status_label"]')).to_have_text(words["active"])
    share.refresh_from_db()
    assert share.is_servable()


@pytest.mark.parametrize(("width", "language"), CASES, ids=IDS)
def test_the_recipient_of_a_used_up_link_reads_one_plain_sentence(anon_context, alice, shared_file, width, language):
    words = WORDS[language]
    share = used_up(shared_file)
    page = browser_page(anon_context, width, language)
    assert page.goto(f"/s/{share.token}").status == 410
    expect(page.get_by_role("heading", level=1)).to_have_text(words["recipient_limit"])
    text = page.locator("main").inner_text()
    assert not re.search(r"\d+ (bytes|octets)", text), text
    axe_check(page)
    save_screenshot(page, f"ended-recipient-{language}-{width}")


def download(share: Share, stored, *, first: int = 0, until: int | None = None) -> None:
    """A response of the link, as links.downloads sends it, closed at `until`."""
    sending = Sending(file_id=stored.pk, size=stored.size)
    reservation = share.reserve_bytes(first=first, end=stored.size, sending=sending)
    assert reservation is not None
    reservation.settle(stored.size if until is None else until)


@pytest.mark.parametrize(("width", "language"), CASES, ids=IDS)
def test_the_history_says_how_far_each_download_got(anon_context, alice, make_file, width, language):
    words = WORDS[language]
    stored = make_file(alice, name="film.mp4", data=b"x" * 1000, content_type="video/mp4")
    share = share_of(stored)
    download(share, stored, until=300)  # cut at 30 %
    download(share, stored, first=300)  # its resume
    download(share, stored)  # a whole one
    page = browser_page(anon_context, width, language)
    sign_in(page, words)
    expect(row_of(page, share).locator('[data-field="in_full"]')).to_have_text(words["in_full_times"])
    page.goto(f"/shares/{share.pk}/")
    details = page.locator(".history-list .detail")
    expect(details.nth(0)).to_contain_text(words["in_full"])
    expect(details.nth(1)).to_contain_text(words["completed"])
    expect(details.nth(2)).to_contain_text(words["stopped"])
    axe_check(page)
    save_screenshot(page, f"ended-history-{language}-{width}")


@pytest.mark.parametrize(("width", "language"), CASES, ids=IDS)
def test_an_upload_requests_lockout_has_a_short_heading_and_explains_below(anon_context, alice, width, language):
    words = WORDS[language]
    upload_request = UploadRequest.create_for(
        owner=alice, expires_at=timezone.now() + timedelta(hours=1), title="Contracts", password="open sesame"
    )
    page = browser_page(anon_context, width, language)
    page.goto(f"/r/{upload_request.token}/")
    for _ in range(11):
        if page.get_by_role("heading", name=words["too_many"]).count():
            break
        page.get_by_label(words["password"], exact=True).fill("open barley")
        page.get_by_role("button", name=words["unlock"]).click()
        page.wait_for_load_state()
    expect(page.get_by_role("heading", level=1)).to_have_text(words["too_many"])
    expect(page.get_by_role("alert")).to_be_visible()
    expect(page.get_by_text(re.compile(words["try_again"]))).to_be_visible()
    axe_check(page)
    save_screenshot(page, f"ended-request-lockout-{language}-{width}")
