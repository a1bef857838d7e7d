"""Every page of the web app and of the public link, in Chromium, held to
axe-core (the pages other browser tests walk through are checked there;
these are the rest): the password change and its confirmation, a page that
does not exist, and a link's page with its owner's message."""

from datetime import timedelta

from django.utils import timezone
from playwright.sync_api import expect

from sharing.models import Share
from tests.browser.helpers import axe_check, no_foreign_requests
from tests.browser.test_web_browser import PASSWORD, sign_in


def test_the_password_change_and_its_confirmation(anon_context, alice):
    page = anon_context().new_page()
    sign_in(page, "alice", PASSWORD)
    page.goto("/account/password/")
    expect(page.get_by_role("heading", name="Change password")).to_be_visible()
    axe_check(page)
    page.locator("#id_old_password").fill(PASSWORD)
    page.locator("#id_new_password1").fill("a-new-long-password-2")
    page.locator("#id_new_password2").fill("a-new-long-password-2")
    page.get_by_role("button", name="Change password").click()
    expect(page.get_by_role("heading", name="Password changed")).to_be_visible()
    axe_check(page)
    no_foreign_requests(page)


def test_a_page_that_does_not_exist(anon_context, alice):
    page = anon_context().new_page()
    sign_in(page, "alice", PASSWORD)
    assert page.goto("/no/such/page/").status == 404
    axe_check(page)


def test_a_links_page_with_its_owners_message(page, alice, shared_file):
    share = Share.create_for(
        file=shared_file, expires_at=timezone.now() + timedelta(hours=1), max_downloads=2, message="Hello\nthere"
    )
    page.goto(f"/s/{share.token}")
    expect(page.locator(".owner-message blockquote br")).to_have_count(1)  # the line break kept
    axe_check(page)
