"""A link whose file is being checked for viruses, in a real browser: the
page says so without a download button, and once a real clamd (tests.clamd)
has scanned the file the page shows the button by itself, without a
reload; without JavaScript it says to reload."""

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone
from playwright.sync_api import expect

from scanning.worker import ScanWorker
from sharing.models import Share, StoredFile
from tests.browser.helpers import axe_check

pytestmark = pytest.mark.django_db(transaction=True)


def waiting_share(alice) -> Share:
    stored = StoredFile.create_from_upload(owner=alice, upload=SimpleUploadedFile("plans.txt", b"the plans\n" * 10))
    return Share.create_for(file=stored, expires_at=timezone.now() + timedelta(hours=1))


def test_the_page_says_being_checked_then_offers_the_download_without_a_reload(page, clamd, alice):
    share = waiting_share(alice)
    page.goto(f"/s/{share.token}")
    notice = page.locator("[data-being-checked]")
    expect(notice).to_contain_text("This file is being checked for viruses.")
    expect(page.get_by_role("link", name="Download")).to_have_count(0)
    expect(page.get_by_role("link", name="Reload this page in a few seconds.")).to_be_hidden()
    axe_check(page)
    page.evaluate("window.notReloaded = true")

    assert ScanWorker().run_once()

    # The page asks again every Retry-After (5 s): a bound, not a timing.
    expect(page.get_by_role("link", name="Download")).to_be_visible(timeout=20000)
    expect(page.locator("[data-being-checked]")).to_have_count(0)
    assert page.evaluate("window.notReloaded") is True


def test_without_javascript_the_page_says_to_reload(page_nojs, clamd, alice):
    share = waiting_share(alice)
    page_nojs.goto(f"/s/{share.token}")
    expect(page_nojs.get_by_role("link", name="Reload this page in a few seconds.")).to_be_visible()
