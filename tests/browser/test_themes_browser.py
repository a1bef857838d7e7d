"""The theme switch in Chromium, and every page held to axe-core in both
themes (colour contrast included) at a desktop's 1280 px and a phone's
390 px:

- without JavaScript, the switcher on the sign-in page turns the pages dark
  or light; the choice is remembered on the owner pages and the link pages,
  and it outranks the system's setting (prefers-color-scheme);
- "System" follows the system's setting;
- every owner page, link page and upload request page passes axe-core in
  light and in dark.

With SAVE_SCREENSHOTS=1 each page is saved as theme-<theme>-<width>-<page>.png
to SCREENSHOTS_DIR (default docs/screenshots/).
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from collect.models import UploadRequest
from pages.themes import COOKIE
from sharing.models import Share
from tests.browser.helpers import axe_check, no_foreign_requests, save_screenshot
from tests.browser.test_web_browser import PASSWORD

WIDTHS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
SCREENS = Path(os.environ["SCREENSHOTS_DIR"]) if os.environ.get("SCREENSHOTS_DIR") else None
# The page's background in each palette (microcloud/static/theme.css).
BACKGROUND = {"light": "rgb(245, 245, 247)", "dark": "rgb(18, 18, 20)"}
# Each theme as a reader gets it: the cookie the switch sets (none for the
# system's), and a system setting the cookie must outrank.
THEMES = {
    "light": {"cookie": "light", "system": "dark", "looks": "light"},
    "dark": {"cookie": "dark", "system": "light", "looks": "dark"},
    "system-dark": {"cookie": None, "system": "dark", "looks": "dark"},
}
WORDS = {
    "en": {"locale": "en-US", "theme": "Theme", "change": "Change theme", "dark": "Dark", "light": "Light"},
    "fr": {"locale": "fr-FR", "theme": "Thème", "change": "Changer de thème", "dark": "Sombre", "light": "Clair"},
}
CASES = [(width, language) for language in WORDS for width in WIDTHS]
IDS = [f"{language}-{width}" for width, language in CASES]


def background(page: Page) -> str:
    return page.evaluate("getComputedStyle(document.body).backgroundColor")


def choose(page: Page, words: dict, theme: str) -> None:
    page.get_by_label(words["theme"], exact=True).select_option(label=words[theme])
    with page.expect_navigation():
        page.get_by_role("button", name=words["change"]).click()


@pytest.mark.parametrize(("width", "language"), CASES, ids=IDS)
def test_the_switch_works_without_javascript_and_is_remembered(anon_context, alice, shared_file, width, language):
    words = WORDS[language]
    share = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1))
    context = anon_context(
        viewport=WIDTHS[width], locale=words["locale"], java_script_enabled=False, color_scheme="light"
    )
    page = context.new_page()
    page.goto("/login/")
    assert background(page) == BACKGROUND["light"]  # the system's, at first
    choose(page, words, "dark")
    assert page.url.endswith("/login/")  # back where the reader was
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    assert background(page) == BACKGROUND["dark"]
    expect(page.get_by_label(words["theme"], exact=True)).to_have_value("dark")
    axe_check(page)

    page.goto(f"/s/{share.token}")  # a link page remembers it too
    assert background(page) == BACKGROUND["dark"]
    page.emulate_media(color_scheme="dark")
    choose(page, words, "light")  # and light outranks a dark system
    assert page.url.endswith(f"/s/{share.token}")
    assert background(page) == BACKGROUND["light"]
    axe_check(page)
    assert [c["value"] for c in context.cookies() if c["name"] == COOKIE] == ["light"]
    no_foreign_requests(page)


@pytest.fixture
def every_page(alice, make_file):
    """The paths of every page with the site's header or footer, with what they show."""
    now = timezone.now()
    report = make_file(alice, name="Quarterly report.pdf", data=b"%PDF" * 500, content_type="application/pdf")
    photo = make_file(alice, name="Team photo.jpg", data=b"\xff\xd8" * 400, content_type="image/jpeg")
    notes = make_file(alice, name="notes.txt", data=b"remember the milk\n" * 20)
    live = Share.create_for(file=report, expires_at=now + timedelta(days=2), max_downloads=5, message="Hello!")
    assert live.count_download()
    locked = Share.create_for(file=photo, expires_at=now + timedelta(hours=3), password="secret words")
    ended = Share.create_for(file=notes, expires_at=now + timedelta(hours=1))
    ended.unshare()
    several = Share.create_for(files=[report, photo, notes], expires_at=now + timedelta(days=1))
    asking = UploadRequest.create_for(
        owner=alice, expires_at=now + timedelta(days=1), title="Contract scans", max_files=3
    )
    closed = UploadRequest.create_for(owner=alice, expires_at=now + timedelta(days=1), title="Closed one")
    UploadRequest.objects.filter(pk=closed.pk).update(
        created_at=now - timedelta(days=2), expires_at=now - timedelta(minutes=1)
    )
    guarded = UploadRequest.create_for(owner=alice, expires_at=now + timedelta(days=1), password="secret")
    owner_pages = {
        "dashboard": "/",
        "dashboard-ended": "/?status=all",
        "dashboard-files": "/?files_page=1",
        "manage": f"/shares/{live.pk}/",
        "manage-ended": f"/shares/{ended.pk}/",
        "share-form": f"/files/{report.pk}/share/",
        "share-several": f"/files/share/?files={report.pk}&files={photo.pk}",
        "file-delete": f"/files/{notes.pk}/delete/",
        "requests": "/requests/",
        "request-delete": f"/requests/{asking.pk}/delete/",
        "token": "/account/token/",
        "password": "/account/password/",
        "not-found": "/no/such/page/",
    }
    public_pages = {
        "link": f"/s/{live.token}",
        "link-password": f"/s/{locked.token}",
        "link-ended": f"/s/{ended.token}",
        "link-several": f"/s/{several.token}",
        "request": f"/r/{asking.token}/",
        "request-ended": f"/r/{closed.token}/",
        "request-password": f"/r/{guarded.token}/",
    }
    return public_pages, owner_pages


@pytest.mark.parametrize("width", list(WIDTHS))
@pytest.mark.parametrize("theme", list(THEMES))
def test_every_page_passes_axe_in_light_and_in_dark(anon_context, live_server, every_page, theme, width):
    wanted = THEMES[theme]
    context = anon_context(viewport=WIDTHS[width], color_scheme=wanted["system"], timezone_id="Europe/Paris")
    if wanted["cookie"]:
        context.add_cookies([{"name": COOKIE, "value": wanted["cookie"], "url": live_server.url}])
    page = context.new_page()
    public_pages, owner_pages = every_page

    def check(name: str, path: str) -> None:
        page.goto(path)
        page.wait_for_load_state()
        assert background(page) == BACKGROUND[wanted["looks"]], name
        axe_check(page)  # colour contrast among its rules
        save_screenshot(page, f"theme-{theme}-{width}-{name}", directory=SCREENS)

    for name, path in public_pages.items():
        check(name, path)
    check("login", "/login/")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Your files and links")).to_be_visible()
    for name, path in owner_pages.items():
        check(name, path)
    no_foreign_requests(page)
