"""Admin and the API docs in a real browser: logging in, styles loading,
axe-core, and no request leaving the site."""

from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import (
    axe_check,
    login,
    no_broken_requests,
    no_foreign_requests,
    save_screenshot,
    submit_admin_login,
    unloaded_stylesheets,
)

PASSWORD = "root-password-1"  # admin_user's, from tests/conftest.py

# Serious axe violations on pages whose markup we do not write. Each one is
# checked to still occur (axe_check's `allow`), so an entry goes once fixed.
DJANGO_ADMIN_KNOWN = {
    "label-title-only": "Django admin's changelist search box is labelled by a magnifier image's alt text only",
}
DJANGO_ADMIN_NO_JS_KNOWN = {
    "button-name": "Django admin's theme toggle shows its name only once theme.js has set html[data-theme]",
}
SWAGGER_UI_KNOWN = {
    "html-has-lang": "drf-spectacular's swagger_ui.html template has no lang on <html>",
    "color-contrast": "Swagger UI's palette: method badges, version stamps, the Authorize button",
    "nested-interactive": "with deepLinking on, Swagger UI puts each operation's link inside its toggle button",
}


def assert_styled(page):
    """The page's style sheets loaded, as the browser applied them."""
    assert unloaded_stylesheets(page) == []
    no_broken_requests(page)


def test_an_admin_logs_in_and_sees_the_shares_list(page, admin_user, make_shares):
    make_shares(1, 3600)

    login(page, admin_user, PASSWORD, next_path="/admin/sharing/share/")

    expect(page.get_by_role("heading", name="Select share to change")).to_be_visible()
    expect(page.locator("#result_list tbody tr")).to_have_count(1)
    expect(page.locator("#result_list")).to_contain_text("report.txt")
    assert_styled(page)
    # Styles reach the page, not only the network: admin's header is coloured.
    assert page.locator("#header").evaluate("el => getComputedStyle(el).backgroundColor") != "rgba(0, 0, 0, 0)"
    axe_check(page, allow=DJANGO_ADMIN_KNOWN)
    no_foreign_requests(page)
    save_screenshot(page, "admin-shares")


def test_a_wrong_password_shows_the_error(page, admin_user):
    with pytest.raises(AssertionError, match="admin login failed"):
        login(page, admin_user, "not-the-password")

    assert urlsplit(page.url).path == "/admin/login/"
    expect(page.locator(".errornote").first).to_contain_text("Please enter the correct username and password")
    expect(page.locator(".errornote").last).to_contain_text("tries left before a pause")
    axe_check(page)
    no_foreign_requests(page)


def test_the_login_page_passes_axe_and_stays_on_site(page):
    page.goto("/admin/login/")

    expect(page.get_by_label("Username")).to_be_visible()
    assert_styled(page)
    axe_check(page)
    no_foreign_requests(page)
    save_screenshot(page, "admin-login")


def test_the_login_form_works_without_javascript(page_nojs, admin_user):
    page_nojs.goto("/admin/login/")
    assert_styled(page_nojs)
    axe_check(page_nojs, allow=DJANGO_ADMIN_NO_JS_KNOWN)

    submit_admin_login(page_nojs, admin_user, PASSWORD)

    assert urlsplit(page_nojs.url).path == "/admin/"
    expect(page_nojs.get_by_role("heading", name="Site administration")).to_be_visible()
    no_foreign_requests(page_nojs)


def test_the_api_docs_run_from_local_files(page):
    page.goto("/api/docs/")

    # Swagger UI ran and fetched the schema: the operations are listed.
    expect(page.locator(".opblock-summary-path[data-path='/api/shares/']").first).to_be_visible()
    assert_styled(page)
    axe_check(page, allow=SWAGGER_UI_KNOWN)
    no_foreign_requests(page)
    save_screenshot(page, "api-docs")
