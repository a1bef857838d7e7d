"""The upload form and upload requests in a real browser, at a desktop's and
a phone's width, in English and French, held to axe-core:

- the drop zone: with JavaScript, styled "Choose files" / "Choose a folder"
  buttons and a drop hint, no native file control shown; without it, one
  plain file input and no promise of dropping;
- a full upload request says so before anything is chosen, the uploader's
  page turns full after its own upload without a reload, and the owner's
  page turns from Open to Full by itself;
- sizes during an upload read as the server prints them (pages.units), in
  both languages, every moment of a share's page (its history's words too)
  in one format, a past date said beside the form's other errors, and the
  reversible Close of a request is not red."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone, translation
from playwright.sync_api import Page, expect

from collect.models import UploadRequest
from pages.units import file_size
from tests.browser.helpers import axe_check, no_foreign_requests
from tests.browser.test_translations_browser import sign_in_in_french
from tests.browser.test_web_browser import PASSWORD, sign_in
from tests.browser.test_web_tus_upload import RECORD_CSP_VIOLATIONS, item_of

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
VIEWPORTS = pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
LANGUAGES = pytest.mark.parametrize("language", ["en", "fr"])
LOCALES = {"en": "en-US", "fr": "fr-FR"}
WORDS = {
    "en": {
        "choose": "Choose files",
        "folder": "Choose a folder",
        "drop": "Drop files here",
        "full": "This request is full.",
        "Full": "Full",
        "Open": "Open",
        "uploaded": "Uploaded",
    },
    "fr": {
        "choose": "Choisir des fichiers",
        "folder": "Choisir un dossier",
        "drop": "Déposez vos fichiers ici",
        "full": "Cette demande est complète.",
        "Full": "Complète",
        "Open": "Ouverte",
        "uploaded": "Envoyé",
    },
}
# What every visible file control of the page is: a native one shows "Choose Files / No file chosen".
VISIBLE_FILE_INPUTS = """() => [...document.querySelectorAll('input[type="file"]')]
    .filter((input) => input.getClientRects().length > 0).length"""


def request_of(owner, **fields) -> UploadRequest:
    return UploadRequest.create_for(owner=owner, expires_at=timezone.now() + timedelta(hours=1), **fields)


def stranger(anon_context, *, viewport=DESKTOP, language="en", javascript=True) -> Page:
    context = anon_context(viewport=viewport, locale=LOCALES[language], java_script_enabled=javascript)
    if javascript:
        context.add_init_script(RECORD_CSP_VIOLATIONS)
    return context.new_page()


def owner_page(anon_context, *, viewport=DESKTOP, language="en") -> Page:
    page = anon_context(viewport=viewport, locale=LOCALES[language]).new_page()
    if language == "fr":
        sign_in_in_french(page)
    else:
        sign_in(page, "alice", PASSWORD)
    return page


def fits_the_width(page: Page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0


def no_csp_violations(page: Page) -> None:
    assert page.evaluate("window.cspViolations || []") == []


@VIEWPORTS
@LANGUAGES
def test_with_javascript_the_zone_has_styled_buttons_and_a_drop_hint(anon_context, alice, viewport, language):
    words = WORDS[language]
    page = stranger(anon_context, viewport=viewport, language=language)
    page.goto(f"/r/{request_of(alice, title='Scans').token}/")
    zone = page.locator("#drop-zone")
    expect(zone.get_by_role("button", name=words["choose"])).to_be_visible()
    expect(zone.get_by_role("button", name=words["folder"])).to_be_visible()  # Chromium picks folders
    expect(zone.get_by_text(words["drop"])).to_be_visible()
    assert page.evaluate(VISIBLE_FILE_INPUTS) == 0  # no native "Choose Files / No file chosen"
    with page.expect_file_chooser() as chooser:
        zone.get_by_role("button", name=words["choose"]).click()
    assert chooser.value.is_multiple()
    chooser.value.set_files([{"name": "scan.pdf", "mimeType": "application/pdf", "buffer": b"%PDF-1.7 hello"}])
    expect(item_of(page, "scan.pdf")).to_contain_text(words["uploaded"], timeout=20_000)
    with page.expect_file_chooser() as chooser:
        zone.get_by_role("button", name=words["folder"]).click()
    assert chooser.value.element.get_attribute("webkitdirectory") is not None
    fits_the_width(page)
    axe_check(page)
    no_csp_violations(page)
    no_foreign_requests(page)


@VIEWPORTS
@LANGUAGES
def test_without_javascript_the_zone_is_one_plain_input_and_promises_no_drop(anon_context, alice, viewport, language):
    words = WORDS[language]
    page = stranger(anon_context, viewport=viewport, language=language, javascript=False)
    page.goto(f"/r/{request_of(alice, title='Scans').token}/")
    assert page.evaluate(VISIBLE_FILE_INPUTS) == 1
    expect(page.locator("#id_files")).to_be_visible()
    expect(page.get_by_text(words["drop"])).to_be_hidden()
    expect(page.get_by_role("button", name=words["folder"])).to_have_count(0)
    expect(page.get_by_role("button", name=words["choose"])).to_have_count(0)
    fits_the_width(page)
    axe_check(page)


def test_the_dashboards_zone_is_the_same_buttons(anon_context, alice):
    page = owner_page(anon_context)
    assert page.evaluate(VISIBLE_FILE_INPUTS) == 0
    expect(page.locator("#drop-zone").get_by_role("button", name="Choose files")).to_be_visible()
    expect(page.locator("#drop-zone").get_by_text("Drop files here")).to_be_visible()


@VIEWPORTS
@LANGUAGES
def test_a_full_request_says_so_before_anything_is_chosen(anon_context, alice, viewport, language):
    upload_request = request_of(alice, title="Scans", max_files=1)
    UploadRequest.objects.filter(pk=upload_request.pk).update(files_taken=1)
    for javascript in (True, False):
        page = stranger(anon_context, viewport=viewport, language=language, javascript=javascript)
        assert page.goto(f"/r/{upload_request.token}/").status == 200
        expect(page.get_by_text(WORDS[language]["full"])).to_be_visible()
        expect(page.locator('input[type="file"]')).to_have_count(0)
        expect(page.locator("#drop-zone")).to_have_count(0)
        fits_the_width(page)
        axe_check(page)


@VIEWPORTS
@LANGUAGES
def test_the_last_place_taken_shows_on_both_pages_without_a_reload(anon_context, alice, viewport, language):
    words = WORDS[language]
    upload_request = request_of(alice, title="One scan", max_files=1)
    owner = owner_page(anon_context, viewport=viewport, language=language)
    owner.goto("/requests/")
    item = owner.locator(f'.request-item[data-request-id="{upload_request.pk}"]')
    expect(item.locator('[data-field="state"]')).to_have_text(words["Open"])
    owner_loads = []
    owner.on("load", lambda _: owner_loads.append(1))

    page = stranger(anon_context, viewport=viewport, language=language)
    page.goto(f"/r/{upload_request.token}/")
    expect(page.locator("[data-files-left]")).to_have_text("1")
    loads = []
    page.on("load", lambda _: loads.append(1))
    page.locator("#id_files").set_input_files([{"name": "a.txt", "mimeType": "text/plain", "buffer": b"hello"}])
    expect(item_of(page, "a.txt")).to_contain_text(words["uploaded"], timeout=20_000)
    expect(page.get_by_text(words["full"])).to_be_visible()
    expect(page.locator("[data-files-left]")).to_have_text("0")
    expect(page.locator("#drop-zone")).to_be_hidden()
    assert loads == []  # the same page, brought up to date
    fits_the_width(page)
    axe_check(page)
    no_csp_violations(page)

    # The owner's page asks every few seconds while it is visible.
    expect(item.locator('[data-field="state"]')).to_have_text(words["Full"], timeout=10_000)
    expect(item.locator('[data-field="files"]')).to_have_text(re.compile(r"^1 \w+ 1$"))
    assert owner_loads == []
    fits_the_width(owner)
    axe_check(owner)
    no_foreign_requests(owner)


SIZES = [0, 1, 2, 39, 1023, 1024, 1280, 1331, 105_881, 10 * 1024**2 + 5, 3 * 1024**3, 7 * 1024**4, 9 * 1024**5]


@LANGUAGES
def test_the_browsers_sizes_are_the_servers(anon_context, alice, language):
    page = stranger(anon_context, language=language)
    page.goto(f"/r/{request_of(alice).token}/")
    shown = page.evaluate("(sizes) => sizes.map((size) => window.microcloudUnits.size(size))", SIZES)
    with translation.override(language):
        assert shown == [file_size(size) for size in SIZES]


@LANGUAGES
def test_an_uploads_size_reads_as_the_file_lists(anon_context, alice, language):
    page = owner_page(anon_context, language=language)
    page.locator("#id_files").set_input_files(
        [{"name": "numbers.bin", "mimeType": "application/octet-stream", "buffer": b"x" * 105_881}]
    )
    item = item_of(page, "numbers.bin")
    expect(item).to_contain_text(WORDS[language]["uploaded"], timeout=20_000)
    with translation.override(language):
        expected = file_size(105_881)
    assert expected == {"en": "103.4\xa0KB", "fr": "103,4\xa0Kio"}[language]
    expect(item.locator('[data-stat="bytes"]')).to_have_text(expected)
    row = page.locator("#files tbody tr").filter(has_text="numbers.bin")
    expect(row).to_contain_text(expected)


def test_closing_a_request_is_not_styled_as_the_danger_deleting_is(anon_context, alice):
    upload_request = request_of(alice, title="Receipts")
    page = owner_page(anon_context)
    page.goto("/requests/")
    item = page.locator(f'.request-item[data-request-id="{upload_request.pk}"]')
    close = item.get_by_role("button", name="Close Receipts")
    delete = item.get_by_role("link", name="Delete Receipts")
    danger = page.evaluate("getComputedStyle(document.documentElement).getPropertyValue('--danger').trim()")
    page.evaluate("(c) => { document.body.style.color = c; }", danger)
    danger_rgb = page.evaluate("getComputedStyle(document.body).color")
    assert close.evaluate("(el) => getComputedStyle(el).backgroundColor") != danger_rgb
    assert delete.evaluate("(el) => getComputedStyle(el).backgroundColor") == danger_rgb


@LANGUAGES
def test_every_moment_of_a_share_page_reads_in_one_format(anon_context, alice, make_file, language):
    from sharing.models import Share

    stored = make_file(alice, name="Plans.pdf", data=b"%PDF-1.4 plans", content_type="application/pdf")
    share = Share.create_for(file=stored, expires_at=timezone.now() + timedelta(hours=1))
    share.set_expiry(share.expires_at + timedelta(hours=1))  # a history line with two moments in its words
    page = anon_context(locale=LOCALES[language], timezone_id="Europe/Paris").new_page()
    if language == "fr":
        sign_in_in_french(page)
    else:
        sign_in(page, "alice", PASSWORD)
    page.goto(f"/shares/{share.pk}/")
    # The moments in the history's words (renewed from, to; created, expires) are times too.
    expect(page.locator(".history .detail time.local-time")).to_have_count(3)
    # Every moment of the page, its history's included, in the one format the page's script writes.
    unconverted = page.evaluate(
        """() => [...document.querySelectorAll("time.local-time")].filter((el) => el.textContent !== new Date(
            el.dateTime).toLocaleString(document.documentElement.lang, {dateStyle: "medium", timeStyle: "long"})
        ).map((el) => el.textContent)"""
    )
    assert unconverted == []
    assert not re.search(r"\d\d:\d\d:\d\d UTC(?![+\-\d])", page.locator(".history").inner_text())
    axe_check(page)


@VIEWPORTS
@LANGUAGES
def test_a_share_form_says_a_past_date_together_with_the_other_errors(
    anon_context, alice, make_file, viewport, language
):
    stored = make_file(alice, name="Plans.pdf", data=b"%PDF-1.4 plans", content_type="application/pdf")
    page = owner_page(anon_context, viewport=viewport, language=language)
    page.goto(f"/files/{stored.pk}/share/")
    page.locator('input[name="max_downloads"]').fill("0")
    page.locator('input[name="expires_local"]').fill("2020-01-01T10:00")
    page.locator('form button[type="submit"]').last.click()
    limit = page.locator('input[name="max_downloads"]')
    when = page.locator('input[name="expires_local"]')
    expect(limit).to_have_attribute("aria-invalid", "true")
    expect(when).to_have_attribute("aria-invalid", "true")
    passed = {"en": "That time has already passed", "fr": "Ce moment est déjà passé"}[language]
    expect(page.get_by_text(passed)).to_be_visible()
    fits_the_width(page)
    axe_check(page)
