"""The dashboard in Chromium with 200 links and 50 files, at a desktop's
1280 px and a phone's 390 px, in English and in French, held to axe-core:

- the Active view comes first and shows ten links a page; the first screen
  of a phone shows them; the whole page at 1280 px stays under 2.5 screens;
- an Expires date stays on one line, and nothing scrolls sideways;
- the views (Active, Ended, All), the search and the folded file list work
  without JavaScript;
- a link made elsewhere (the API) appears at the top without a reload.

With SAVE_SCREENSHOTS=1 each page is saved as dashboard-<case>.png to
SCREENSHOTS_DIR (default docs/screenshots/).
"""

from __future__ import annotations

import os
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect
from rest_framework.test import APIClient

from sharing.models import Share
from tests.browser.helpers import SCREENSHOT_DIR, axe_check, is_true, no_foreign_requests, save_screenshot
from tests.browser.test_web_browser import PASSWORD

WIDTHS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
SCREENS = Path(os.environ["SCREENSHOTS_DIR"]) if os.environ.get("SCREENSHOTS_DIR") else None

WORDS = {
    "en": {
        "locale": "en-US",
        "heading": "Log in",
        "username": "Username",
        "password": "Password",
        "log_in": "Log in",
        "dashboard": "Your files and links",
        "links": "Your links",
        "active": "Active",
        "ended": "Ended",
        "all": "All",
        "search": "Search links",
        "search_button": "Search",
        "matches": "1 link matches “holiday 7”.",
        "copy": "Copy",
        "no_active": "No active links. Share a file below, or see the ended ones.",
        "file_heading": "Your files",
        "share": "Share",
    },
    "fr": {
        "locale": "fr-FR",
        "heading": "Se connecter",
        "username": "Nom d\u2019utilisateur",
        "password": "Mot de passe",
        "log_in": "Se connecter",
        "dashboard": "Vos fichiers et vos liens",
        "links": "Vos liens",
        "active": "Actifs",
        "ended": "Terminés",
        "all": "Tous",
        "search": "Chercher un lien",
        "search_button": "Chercher",
        "matches": "1 lien correspond à « holiday 7 ».",
        "copy": "Copier",
        "no_active": "Aucun lien actif. Partagez un fichier plus bas, ou voyez les liens terminés.",
        "file_heading": "Vos fichiers",
        "share": "Partager",
    },
}
CASES = [(width, language) for language in WORDS for width in WIDTHS]
IDS = [f"{language}-{width}" for width, language in CASES]


@pytest.fixture
def crowded(alice, make_file):
    """Alice's 50 files and 200 links: 150 live, 50 ended (unshared or past their deadline)."""
    files = [make_file(alice, name=f"holiday {n} photos from the seaside.jpg") for n in range(50)]
    now = timezone.now()
    links = []
    for n in range(200):
        share = Share.create_for(file=files[n % 50], expires_at=now + timedelta(days=3, minutes=n), max_downloads=5)
        links.append(share)
    for share in links[:25]:
        share.unshare()
    for share in links[25:50]:
        Share.objects.filter(pk=share.pk).update(
            created_at=now - timedelta(hours=2), expires_at=now - timedelta(minutes=5)
        )
    return files, links


def browser_page(anon_context, width: str, language: str, **options) -> Page:
    words = WORDS[language]
    return anon_context(
        viewport=WIDTHS[width], locale=words["locale"], timezone_id="Europe/Paris", **options
    ).new_page()


def sign_in(page: Page, words: dict) -> None:
    page.goto("/")
    expect(page.get_by_role("heading", name=words["heading"])).to_be_visible()
    page.get_by_label(words["username"]).fill("alice")
    page.get_by_label(words["password"]).fill(PASSWORD)
    page.get_by_role("button", name=words["log_in"]).click()
    expect(page.get_by_role("heading", name=words["dashboard"])).to_be_visible()


def shot(page: Page, name: str) -> None:
    """The whole page, and the first screen as the reader sees it before scrolling."""
    save_screenshot(page, name, directory=SCREENS)
    if is_true(os.environ.get("SAVE_SCREENSHOTS")):
        page.screenshot(path=(SCREENS or SCREENSHOT_DIR) / f"{name}-first-screen.png")


TABLE_OVERFLOW = """() => {
    const table = document.querySelector('.shares-table'), card = table.closest('.card');
    const style = getComputedStyle(card);
    return table.getBoundingClientRect().right - (card.getBoundingClientRect().right - parseFloat(style.paddingRight));
}"""


def lines_of(page: Page, selector: str) -> int:
    """The most lines any element matching `selector` takes."""
    return page.evaluate(
        """(selector) => Math.max(0, ...[...document.querySelectorAll(selector)].map((el) => {
            const height = el.getBoundingClientRect().height;
            const line = parseFloat(getComputedStyle(el).lineHeight) || 24;
            return Math.round(height / line);
        }))""",
        selector,
    )


@pytest.mark.parametrize(("width", "language"), CASES, ids=IDS)
def test_the_dashboard_of_200_links_and_50_files_stays_short(anon_context, crowded, width, language):
    words = WORDS[language]
    page = browser_page(anon_context, width, language)
    sign_in(page, words)
    rows = page.locator("tbody tr.share-row")
    expect(rows).to_have_count(10)
    # Measured once the script has written the moments in the reader's zone (longer than UTC's).
    expect(rows.first.locator("td[data-label] time")).to_contain_text(re.compile(r"(GMT|UTC)[+-]"))
    expect(page.get_by_role("link", name=words["active"], exact=True)).to_have_attribute("aria-current", "page")
    screen = WIDTHS[width]["height"]
    height = page.evaluate("document.documentElement.scrollHeight")
    print(f"{language} {width}: {height} px tall, {height / screen:.2f} screens")
    if width == "desktop":
        assert height < 2.5 * screen, f"{height} px is {height / screen:.2f} screens"
    else:
        # The first screen, unscrolled, shows the links' heading and the first active link.
        first = rows.first.bounding_box()
        assert page.get_by_role("heading", name=words["links"], exact=True).bounding_box()["y"] < screen
        assert first["y"] + min(first["height"], 200) <= screen, first
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
    assert page.evaluate(TABLE_OVERFLOW) <= 0  # the table stays inside its card
    if width == "desktop":
        page.set_viewport_size({"width": 1024, "height": 768})
        assert page.evaluate(TABLE_OVERFLOW) <= 0  # and on a smaller screen too
        assert lines_of(page, ".shares-table td[data-label] time") <= 2
        page.set_viewport_size(WIDTHS[width])
    assert lines_of(page, ".shares-table td[data-label] time") <= (1 if width == "desktop" else 2)
    axe_check(page)
    no_foreign_requests(page)
    shot(page, f"dashboard-{language}-{width}")


@pytest.mark.parametrize(("width", "language"), CASES, ids=IDS)
def test_a_link_made_through_the_api_appears_on_top_without_a_reload(
    anon_context, alice, make_file, make_shares, width, language
):
    words = WORDS[language]
    make_shares(10, 3600)
    page = browser_page(anon_context, width, language, permissions=["clipboard-read", "clipboard-write"])
    sign_in(page, words)
    rows = page.locator("tbody tr.share-row")
    expect(rows).to_have_count(10)
    made = make_file(alice, name="made elsewhere.pdf")
    api = APIClient()
    api.force_authenticate(alice)
    response = api.post("/api/shares/", {"file": made.pk, "expires_in": 7200}, format="json")
    assert response.status_code == 201, response.content
    share = Share.objects.get(token=response.json()["token"])
    # Within a poll or two (every 5 s), on top; the page keeps ten rows.
    expect(rows.first).to_have_attribute("data-share-id", str(share.pk), timeout=15_000)
    expect(rows.first.locator(".file-name")).to_contain_text("made elsewhere.pdf")
    expect(rows).to_have_count(10)
    expect(rows.first.locator('[data-field="time_left"]')).to_have_text(re.compile(r"^[12]\s*hr?\s"))
    copy = rows.first.get_by_role("button", name=re.compile(f"^{words['copy']}"))
    expect(copy).to_be_visible()
    copy.click()
    assert page.evaluate("navigator.clipboard.readText()").endswith(f"/s/{share.token}")
    axe_check(page)
    no_foreign_requests(page)


def test_a_first_link_made_elsewhere_appears_on_an_empty_dashboard(anon_context, alice, shared_file):
    words = WORDS["en"]
    page = browser_page(anon_context, "phone", "en")
    sign_in(page, words)
    expect(page.get_by_text(words["no_active"])).to_be_visible()
    share = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1))
    row = page.locator(f'tbody tr[data-share-id="{share.pk}"]')
    expect(row).to_be_visible(timeout=15_000)
    expect(page.get_by_text(words["no_active"])).to_have_count(0)
    axe_check(page)


def test_ended_links_do_not_come_in_nor_on_other_views(anon_context, alice, shared_file, make_shares):
    make_shares(3, 3600)
    page = browser_page(anon_context, "desktop", "en")
    sign_in(page, WORDS["en"])
    page.goto("/?status=all")
    rows = page.locator("tbody tr.share-row")
    expect(rows).to_have_count(3)
    Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1))
    page.wait_for_timeout(6_000)  # past a poll: the All view is in the server's order, not the script's
    expect(rows).to_have_count(3)


@pytest.mark.parametrize(("width", "language"), CASES, ids=IDS)
def test_the_views_the_search_and_the_files_work_without_javascript(anon_context, crowded, width, language):
    words = WORDS[language]
    page = browser_page(anon_context, width, language, java_script_enabled=False)
    sign_in(page, words)
    rows = page.locator("tbody tr.share-row")
    expect(rows).to_have_count(10)
    page.get_by_role("link", name=words["ended"], exact=True).click()
    expect(page.get_by_role("link", name=words["ended"], exact=True)).to_have_attribute("aria-current", "page")
    expect(rows).to_have_count(10)
    ended = {share.pk for share in crowded[1][:50]}
    ids = {int(row.get_attribute("data-share-id")) for row in rows.all()}
    assert ids <= ended
    axe_check(page)
    shot(page, f"dashboard-ended-{language}-{width}")

    page.get_by_label(words["search"]).fill("holiday 7 ")
    page.get_by_role("button", name=words["search_button"], exact=True).click()
    # holiday 7's four links: one ended (the 8th link made), three active, in the Ended view one.
    expect(page.get_by_text(words["matches"])).to_be_visible()
    expect(rows).to_have_count(1)
    page.get_by_role("link", name=words["all"], exact=True).click()
    expect(rows).to_have_count(4)  # the search kept across views
    axe_check(page)
    shot(page, f"dashboard-search-{language}-{width}")

    files = page.locator("details.file-list")
    share_links = files.get_by_role("link", name=re.compile(f"^{words['share']}"))
    expect(share_links.first).to_be_hidden()
    files.locator("summary").click()
    expect(share_links.first).to_be_visible()
    expect(share_links).to_have_count(10)
    axe_check(page)
    shot(page, f"dashboard-files-{language}-{width}")
