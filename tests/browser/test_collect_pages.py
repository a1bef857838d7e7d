"""Upload requests in a real browser: a stranger holding the link sends
files through the request's page (tus, the same upload.js as the
dashboard), gives its password first when it has one, and finds it ended
after its deadline; the owner makes, watches, closes and deletes requests
at /requests/. Every page held to axe-core at a desktop's and a phone's
width, and the owner's note shown as text, never run."""

from __future__ import annotations

import re
import time
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from collect.models import ReceivedFile, UploadRequest
from sharing.models import StoredFile
from tests.browser.helpers import axe_check, no_foreign_requests, save_screenshot
from tests.browser.test_web_browser import LOCAL_MOMENT, PASSWORD, sign_in
from tests.browser.test_web_tus_upload import RECORD_CSP_VIOLATIONS, item_of, sha256, source, stored_sha256

KiB = 1024
CHUNK = 256 * KiB
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
HOSTILE_NOTE = 'Hello <img src=x onerror="window.pwned = 1"> there'


@pytest.fixture
def small_chunks(settings):
    settings.TUS_WEB_CHUNK_BYTES = CHUNK
    return CHUNK


def request_of(owner, seconds: float = 3600, **fields) -> UploadRequest:
    return UploadRequest.create_for(owner=owner, expires_at=timezone.now() + timedelta(seconds=seconds), **fields)


def link_of(upload_request: UploadRequest) -> str:
    return f"/r/{upload_request.token}/"


def stranger(anon_context, viewport=DESKTOP) -> Page:
    context = anon_context(viewport=viewport)
    context.add_init_script(RECORD_CSP_VIOLATIONS)
    return context.new_page()


def request_item(page: Page, upload_request: UploadRequest):
    return page.locator(f'.request-item[data-request-id="{upload_request.pk}"]')


def no_csp_violations(page: Page) -> None:
    assert page.evaluate("window.cspViolations || []") == []


def fits_the_width(page: Page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0


def test_a_stranger_sends_two_files_that_arrive_intact_for_the_owner(anon_context, alice, tmp_path, small_chunks):
    upload_request = request_of(alice, title="Holiday photos", max_files=5, max_bytes=10 * 1024 * KiB)
    photos = source(tmp_path, "beach.jpg", 3 * CHUNK + 123, seed=1)
    notes = source(tmp_path, "notes.txt", CHUNK + 7, seed=2)
    page = stranger(anon_context)
    page.goto(link_of(upload_request))
    expect(page.get_by_role("heading", name="Holiday photos")).to_be_visible()
    expect(page.get_by_text("alice asks you for files.")).to_be_visible()
    expect(page.locator(".facts time")).to_have_text(LOCAL_MOMENT)  # the deadline in the stranger's own zone
    posts: list[str] = []
    page.on("request", lambda request: posts.append(request.url) if request.method == "POST" else None)
    page.locator("#id_files").set_input_files([photos, notes])
    expect(item_of(page, "beach.jpg")).to_contain_text("Uploaded", timeout=20_000)
    expect(item_of(page, "notes.txt")).to_contain_text("Uploaded", timeout=20_000)
    assert posts == [page.url + "uploads/"] * 2  # one tus creation per file, at the request's own endpoint
    stored = {file.name: file for file in StoredFile.objects.filter(owner=alice)}
    assert set(stored) == {"beach.jpg", "notes.txt"}
    assert stored_sha256(stored["beach.jpg"]) == sha256(photos.read_bytes())
    assert stored_sha256(stored["notes.txt"]) == sha256(notes.read_bytes())
    assert sorted((received.name, received.arrived) for received in ReceivedFile.objects.all()) == [
        ("beach.jpg", True),
        ("notes.txt", True),
    ]
    axe_check(page)
    no_csp_violations(page)
    no_foreign_requests(page)
    save_screenshot(page, "collect-request-page")

    owner = anon_context(viewport=DESKTOP).new_page()
    sign_in(owner, "alice", PASSWORD)
    owner.get_by_role("link", name="Upload requests").click()
    expect(owner.get_by_role("heading", name="Upload requests", level=1)).to_be_visible()
    item = request_item(owner, upload_request)
    expect(item.locator('[data-field="files"]')).to_have_text("2 of 5")
    for name in ("beach.jpg", "notes.txt"):
        row = item.locator("tbody tr").filter(has=owner.get_by_role("rowheader", name=name))
        expect(row.locator('[data-field="arrival"] time')).to_be_visible()
    expect(item.get_by_text("arriving")).to_have_count(0)
    expect(item.locator("time").first).to_have_text(LOCAL_MOMENT)
    axe_check(owner)
    save_screenshot(owner, "web-upload-requests")


def test_a_password_request_asks_for_it_refuses_a_wrong_one_then_takes_files(anon_context, alice, small_chunks):
    upload_request = request_of(alice, title="Contracts", password="open sesame")
    page = stranger(anon_context)
    page.goto(link_of(upload_request))
    expect(page.get_by_role("heading", name="This upload request is protected by a password")).to_be_visible()
    expect(page.locator("#id_files")).to_have_count(0)
    page.get_by_label("Password", exact=True).fill("open barley")
    with page.expect_response(lambda response: response.request.method == "POST") as answer:
        page.get_by_role("button", name="Unlock").click()
    assert answer.value.status == 403
    expect(page.get_by_role("alert")).to_have_text("Wrong password. Try again. 9 tries left before a pause.")
    expect(page.get_by_label("Password", exact=True)).to_have_attribute("aria-invalid", "true")
    axe_check(page)
    page.get_by_label("Password", exact=True).fill("open sesame")
    page.get_by_role("button", name="Unlock").click()
    expect(page.get_by_role("heading", name="Contracts")).to_be_visible()
    page.locator("#id_files").set_input_files(
        [{"name": "signed.pdf", "mimeType": "application/pdf", "buffer": b"%PDF-1.7 signed"}]
    )
    expect(item_of(page, "signed.pdf")).to_contain_text("Uploaded", timeout=20_000)
    assert stored_sha256(StoredFile.objects.get(owner=alice)) == sha256(b"%PDF-1.7 signed")
    no_csp_violations(page)
    no_foreign_requests(page)


def test_the_page_says_the_request_ended_after_its_deadline(anon_context, alice):
    upload_request = request_of(alice, seconds=2, title="Quick")
    page = stranger(anon_context)
    assert page.goto(link_of(upload_request)).status == 200
    time.sleep(max(0, (upload_request.expires_at - timezone.now()).total_seconds()) + 0.1)
    assert page.reload().status == 410
    expect(page.get_by_role("heading", name="This upload request has ended")).to_be_visible()
    expect(page.locator("#id_files")).to_have_count(0)
    axe_check(page)
    no_foreign_requests(page)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_every_request_page_passes_axe(anon_context, alice, make_file, viewport):
    ended = request_of(alice, title="Ended one")
    UploadRequest.objects.filter(pk=ended.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    locked = request_of(alice, title="Locked one", password="secret")
    shown = request_of(alice, title="Scans of every page of the contract", note="All pages,\nplease.", max_files=3)
    page = stranger(anon_context, viewport)
    for path, heading in [
        (link_of(shown), "Scans of every page of the contract"),
        (link_of(locked), "This upload request is protected by a password"),
        (link_of(ended), "This upload request has ended"),
    ]:
        page.goto(path)
        expect(page.get_by_role("heading", name=heading)).to_be_visible()
        fits_the_width(page)
        axe_check(page)
        if path == link_of(shown) and viewport == PHONE:
            save_screenshot(page, "collect-request-page-phone")
    no_csp_violations(page)

    owner = anon_context(viewport=viewport).new_page()
    sign_in(owner, "alice", PASSWORD)
    owner.goto("/requests/")
    expect(request_item(owner, ended)).to_contain_text("Ended at its deadline")
    expect(request_item(owner, shown).locator('[data-field="state"]')).to_have_text("Open")
    fits_the_width(owner)
    axe_check(owner)
    owner.goto(f"/requests/{shown.pk}/delete/")
    fits_the_width(owner)
    axe_check(owner)
    no_foreign_requests(owner)


def test_the_owners_note_is_shown_as_text_and_never_runs(anon_context, alice):
    upload_request = request_of(alice, note=HOSTILE_NOTE)
    page = stranger(anon_context)
    page.goto(link_of(upload_request))
    expect(page.locator(".owner-message blockquote")).to_have_text(HOSTILE_NOTE)
    expect(page.locator("main img")).to_have_count(0)
    assert page.evaluate("window.pwned") is None
    no_csp_violations(page)
    no_foreign_requests(page)

    owner = anon_context().new_page()
    sign_in(owner, "alice", PASSWORD)
    owner.goto("/requests/")
    expect(request_item(owner, upload_request).locator(".owner-message blockquote")).to_have_text(HOSTILE_NOTE)
    expect(owner.locator("main img")).to_have_count(0)
    assert owner.evaluate("window.pwned") is None


def test_the_owner_makes_closes_and_deletes_a_request(anon_context, alice):
    owner = anon_context(viewport=DESKTOP).new_page()
    sign_in(owner, "alice", PASSWORD)
    owner.goto("/requests/")
    expect(owner.get_by_text("No upload requests yet.")).to_be_visible()
    owner.get_by_label("Title").fill("Receipts")
    owner.get_by_label("Note to the uploader").fill("The ones from March.")
    owner.get_by_label("7 days").check()
    owner.get_by_label("File limit").fill("4")
    owner.get_by_label("Size limit").fill("lots")
    owner.get_by_role("button", name="Create the request").click()
    size = owner.get_by_label("Size limit")
    expect(size).to_have_attribute("aria-invalid", "true")
    expect(owner.locator(f"#{size.get_attribute('aria-describedby').split()[-1]}")).to_contain_text(
        "Enter a size such as 500 MB"
    )
    axe_check(owner)
    size.fill("10 MB")
    owner.get_by_label("Email me when a file arrives").check()
    owner.get_by_role("button", name="Create the request").click()
    made = UploadRequest.objects.get()
    link = f"{owner.url.split('/requests/')[0]}{link_of(made)}"
    expect(owner.locator(".messages")).to_contain_text(f"Send this link: {link}")
    assert (made.max_files, made.max_bytes, made.notify_by_email) == (4, 10_000_000, True)
    item = request_item(owner, made)
    expect(item.get_by_role("link", name=link)).to_be_visible()
    expect(item.get_by_role("button", name="Copy the link of Receipts")).to_be_visible()
    expect(item.locator('[data-field="bytes"]')).to_have_text(re.compile(r"^0\sbytes of 9\.5\sMB$"))
    axe_check(owner)

    item.get_by_role("button", name="Close Receipts").click()
    expect(owner.get_by_text("The upload request is closed")).to_be_visible()
    expect(request_item(owner, made).locator('[data-field="state"]')).to_contain_text("Closed by you")
    expect(request_item(owner, made).get_by_role("button", name="Close Receipts")).to_have_count(0)
    request_item(owner, made).get_by_role("link", name="Delete Receipts").click()
    expect(owner.get_by_role("heading", name="Delete the upload request Receipts?")).to_be_visible()
    owner.get_by_role("button", name="Delete the request").click()
    expect(owner.get_by_text("No upload requests yet.")).to_be_visible()
    assert not UploadRequest.objects.exists()
    no_foreign_requests(owner)
