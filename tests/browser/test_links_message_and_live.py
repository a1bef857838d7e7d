"""The recipient's page in a real browser: the owner's message as plain
text, and the downloads left kept current after a download, without a reload."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from sharing.models import Share
from tests.browser.helpers import axe_check, save_screenshot

DATA = b"%PDF-1.4\n" + bytes(range(256)) * 8


@pytest.fixture
def report(alice, make_file):
    return make_file(alice, name="Quarterly report.pdf", data=DATA, content_type="application/pdf")


def share_of(stored, **options) -> Share:
    return Share.create_for(file=stored, expires_at=timezone.now() + timedelta(hours=1), **options)


def mark_page(page) -> None:
    """A flag that a reload would wipe: the page must still carry it."""
    page.evaluate("window.notReloaded = true")


def test_downloads_left_goes_down_after_a_download_without_a_reload(page, report):
    share = share_of(report, max_downloads=3)
    page.goto(f"/s/{share.token}")
    left = page.locator("[data-downloads-left]")
    expect(left).to_have_text("3")
    mark_page(page)
    with page.expect_download() as download:
        page.get_by_role("link", name="Download").click()
    assert download.value.failure() is None
    expect(left).to_have_text("2", timeout=5000)
    assert page.evaluate("window.notReloaded") is True
    expect(page.get_by_role("link", name="Download")).to_be_visible()


def test_the_last_download_turns_the_page_into_its_end_without_a_reload(page, report):
    share = share_of(report, max_downloads=1)
    page.goto(f"/s/{share.token}")
    mark_page(page)
    with page.expect_download() as download:
        page.get_by_role("link", name="Download").click()
    assert download.value.failure() is None
    expect(page.locator(".ended-notice")).to_have_text(
        "This link has been downloaded as many times as its sender allowed.", timeout=5000
    )
    expect(page.get_by_role("link", name="Download")).to_be_hidden()
    assert page.evaluate("window.notReloaded") is True
    axe_check(page)


def test_the_owners_message_reads_as_typed_and_runs_nothing(page, report):
    message = 'Here is the report.\n<img src=x onerror="window.ran=1"><b>not bold</b>'
    share = share_of(report, message=message)
    page.goto(f"/s/{share.token}")
    note = page.locator(".owner-message")
    expect(note).to_contain_text("A message from alice:")
    expect(note.locator("blockquote")).to_have_text(
        re.compile(r'^Here is the report\.\s*<img src=x onerror="window.ran=1"><b>not bold</b>$')
    )
    assert note.locator("img, b").count() == 0
    assert page.evaluate("window.ran") is None
    axe_check(page)
    save_screenshot(page, "link-landing-message")


def test_a_password_link_keeps_its_message_until_unlocked(page, report):
    share = share_of(report, password="pw", message="For your eyes only")
    page.goto(f"/s/{share.token}")
    expect(page.get_by_text("For your eyes only")).to_have_count(0)
    page.get_by_label("Password").fill("pw")
    page.get_by_role("button", name="Unlock").click()
    expect(page.locator(".owner-message blockquote")).to_have_text("For your eyes only")
