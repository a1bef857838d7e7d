"""The browser fixtures keep their own rules: the skip rule, the request log,
axe_check (with and without JavaScript) and screenshots."""

import stat

import pytest
from django.db import connection  # noqa: F401  (read by the skipif condition)
from playwright.sync_api import Error as PlaywrightError

from tests.browser.chromium import Chromium, chromium_executable, warn_on_version_gap
from tests.browser.helpers import axe_check, no_broken_requests, no_foreign_requests, request_log, save_screenshot
from tests.browser.network import close_checked, origin_of
from tests.helpers import free_port

# Nothing here depends on the database: checked once, in the SQLite pass.
pytestmark = pytest.mark.skipif("connection.vendor != 'sqlite'", reason="the browser harness is database-independent")

IMAGE_WITHOUT_ALT = "<img src='data:image/gif;base64,R0lGODlhAQABAAAAACw='>"
# A page with no axe violations, served at the live server's origin by the
# browser itself: the axe tests see only what they add to it.
CLEAN_PAGE = """<!DOCTYPE html>
<html lang="en"><head><title>Harness</title></head>
<body><main><h1>Harness</h1><div id="container"></div></main></body></html>"""


def open_clean_page(page):
    page.route("**/harness/", lambda route: route.fulfill(body=CLEAN_PAGE, content_type="text/html"))
    page.goto("/harness/")


def add_to_body(page, html):
    page.evaluate("html => document.body.insertAdjacentHTML('beforeend', html)", html)


@pytest.fixture
def forget_requests():
    """Clear a page's request log after a test that broke the rules on purpose."""
    pages = []
    yield pages.append
    for page in pages:
        log = request_log(page)
        log.urls.clear()
        log.broken.clear()


# --- the skip rule ---------------------------------------------------------


def test_it_skips_without_chromium():
    with pytest.raises(pytest.skip.Exception, match="no Chromium at /nowhere/chromium"):
        chromium_executable({"CHROMIUM_PATH": "/nowhere/chromium"})


@pytest.mark.parametrize("ci", ["true", "TRUE", "True", "1", "yes"])
def test_it_fails_without_chromium_under_ci(ci):
    with pytest.raises(pytest.fail.Exception, match="CI=true requires the browser tests to run"):
        chromium_executable({"CHROMIUM_PATH": "/nowhere/chromium", "CI": ci})


@pytest.mark.parametrize("ci", ["false", "0", ""])
def test_it_skips_when_ci_is_not_true(ci):
    with pytest.raises(pytest.skip.Exception):
        chromium_executable({"CHROMIUM_PATH": "/nowhere/chromium", "CI": ci})


def test_it_needs_an_executable_file(tmp_path):
    chromium = tmp_path / "chromium"
    chromium.write_text("#!/bin/sh\n")
    with pytest.raises(pytest.skip.Exception):
        chromium_executable({"CHROMIUM_PATH": str(chromium)})

    chromium.chmod(chromium.stat().st_mode | stat.S_IXUSR)
    assert chromium_executable({"CHROMIUM_PATH": str(chromium)}) == str(chromium)


def test_it_warns_when_chromium_is_not_the_one_playwright_was_built_for():
    with pytest.warns(UserWarning, match="Chromium 1.0.0.0 is driven by a Playwright built for Chromium"):
        warn_on_version_gap("1.0.0.0")


# --- starting Chromium -----------------------------------------------------


class FailsFirst:
    """Playwright's launcher, its first start pointed at no Chromium: a real failed start."""

    def __init__(self, launcher):
        self.launcher = launcher
        self.starts = 0

    def launch(self, **options):
        self.starts += 1
        if self.starts == 1:
            options["executable_path"] = "/nowhere/chromium"
        return self.launcher.launch(**options)


def test_a_browser_that_is_gone_is_replaced_by_a_new_one(chromium):
    own = Chromium(chromium.launcher, chromium.executable)
    try:
        first = own.browser()
        assert own.browser() is first
        assert own.launches == 1
        first.close()  # as a crash leaves it: no longer connected
        second = own.browser()
        assert second is not first
        assert second.is_connected()
        assert own.launches == 2
        assert second.new_page().evaluate("1 + 1") == 2
    finally:
        own.close()


def test_a_start_that_fails_is_tried_again_and_shown(chromium):
    launcher = FailsFirst(chromium.launcher)
    own = Chromium(launcher, chromium.executable)
    try:
        shown = r"Chromium did not start \(attempt 1 of 3\); starting it again: .*nowhere"
        with pytest.warns(UserWarning, match=shown):
            browser = own.browser()
        assert browser.is_connected()
        assert (launcher.starts, own.launches) == (2, 1)
    finally:
        own.close()


def test_the_last_failed_start_is_raised(chromium):
    own = Chromium(chromium.launcher, "/nowhere/chromium", attempts=2)
    with pytest.warns(UserWarning, match=r"attempt 1 of 2"), pytest.raises(PlaywrightError, match="nowhere"):
        own.browser()
    assert own.launches == 0


# --- the request log -------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "same"),
    [
        ("http://localhost:8000/static/a.css", True),
        ("ws://localhost:8000/socket", True),
        ("HTTP://LOCALHOST:8000/", True),
        ("data:image/png;base64,AAAA", True),
        ("blob:http://localhost:8000/6b1f", True),
        ("http://127.0.0.1:8000/", False),
        ("http://localhost:8001/", False),
        ("https://localhost:8000/", False),
        ("http://localhost/", False),
        ("https://cdn.example.com/swagger-ui.css", False),
    ],
)
def test_same_origin_is_scheme_host_and_port(url, same):
    own = origin_of("http://localhost:8000")
    assert (origin_of(url) in (None, own)) is same


def test_it_flags_a_request_to_another_origin(page, forget_requests):
    page.goto("/admin/login/")
    add_to_body(page, "<img alt='' src='data:image/gif;base64,R0lGODlhAQABAAAAACw='>")
    no_foreign_requests(page)

    page.route("http://elsewhere.test/**", lambda route: route.fulfill(body=b"", content_type="image/gif"))
    with page.expect_request("http://elsewhere.test/pixel.gif"):
        add_to_body(page, "<img alt='' src='http://elsewhere.test/pixel.gif'>")

    forget_requests(page)
    with pytest.raises(AssertionError, match=r"elsewhere\.test/pixel\.gif"):
        no_foreign_requests(page)


def test_contexts_are_checked_when_the_test_ends(anon_context, forget_requests):
    context = anon_context()
    page = context.new_page()
    open_clean_page(page)
    with page.expect_websocket():
        page.evaluate("port => { window.socket = new WebSocket(`ws://127.0.0.1:${port}/`); }", free_port())

    forget_requests(page)
    with pytest.raises(AssertionError, match=r"request to another origin: ws://127\.0\.0\.1"):
        close_checked([context])


def test_it_flags_a_websocket_to_another_origin(page, forget_requests):
    page.goto("/admin/login/")
    with page.expect_websocket():
        page.evaluate("port => { window.socket = new WebSocket(`ws://127.0.0.1:${port}/`); }", free_port())

    forget_requests(page)
    with pytest.raises(AssertionError, match=r"ws://127\.0\.0\.1"):
        no_foreign_requests(page)


def test_it_flags_a_missing_static_file_and_a_server_error(page, forget_requests):
    page.goto("/admin/login/")
    no_broken_requests(page)

    page.route("**/boom/", lambda route: route.fulfill(status=500, body="boom"))
    with page.expect_response("**/static/no-such.css"):
        add_to_body(page, "<link rel='stylesheet' href='/static/no-such.css'>")
    page.evaluate("() => fetch('/boom/')")

    forget_requests(page)
    with pytest.raises(AssertionError) as failure:
        no_broken_requests(page)
    assert "stylesheet answered 404" in str(failure.value)
    assert "server error 500: GET" in str(failure.value)


def test_a_fetch_answered_4xx_is_the_tests_business(page):
    page.goto("/admin/login/")
    assert page.evaluate("() => fetch('/api/shares/').then((response) => response.status)") in (401, 403)
    no_broken_requests(page)


# --- axe_check -------------------------------------------------------------


def test_axe_check_fails_on_a_critical_violation(page):
    open_clean_page(page)
    add_to_body(page, IMAGE_WITHOUT_ALT)

    with pytest.raises(AssertionError, match=r"image-alt \(critical\)"):
        axe_check(page)


def test_axe_check_allows_a_known_violation_only_while_it_occurs(page):
    open_clean_page(page)
    add_to_body(page, IMAGE_WITHOUT_ALT)
    axe_check(page, allow={"image-alt": "a test image"})

    page.evaluate("() => document.querySelector('img:not([alt])').remove()")
    with pytest.raises(AssertionError, match=r"no longer fail there.*image-alt"):
        axe_check(page, allow={"image-alt": "a test image"})


def test_axe_check_can_be_scoped(page):
    open_clean_page(page)
    add_to_body(page, f"<div id='theirs'>{IMAGE_WITHOUT_ALT}</div>")

    axe_check(page, include=["#container"])
    axe_check(page, exclude=["#theirs"])
    with pytest.raises(AssertionError, match="image-alt"):
        axe_check(page, include=["#theirs"])


def test_axe_check_reports_minor_violations_without_failing(page):
    open_clean_page(page)
    # Two same-named landmarks without labels: "landmark-unique", moderate.
    add_to_body(page, "<nav></nav><nav></nav>")

    violations = axe_check(page)

    assert "landmark-unique" in {violation["id"] for violation in violations}


def test_axe_check_runs_on_a_page_without_javascript(page_nojs):
    open_clean_page(page_nojs)
    axe_check(page_nojs)

    add_to_body(page_nojs, IMAGE_WITHOUT_ALT)
    with pytest.raises(AssertionError, match="image-alt"):
        axe_check(page_nojs)


def test_axe_check_sees_noscript_content_as_a_page_without_javascript_shows_it(page_nojs):
    open_clean_page(page_nojs)
    add_to_body(page_nojs, f"<noscript>{IMAGE_WITHOUT_ALT}</noscript>")

    with pytest.raises(AssertionError, match="image-alt"):
        axe_check(page_nojs)


def test_axe_check_runs_none_of_the_pages_scripts_on_a_page_without_javascript(page_nojs):
    open_clean_page(page_nojs)
    page_nojs.evaluate(
        """html => {
            const script = document.createElement('script');
            script.textContent = `document.body.insertAdjacentHTML('beforeend', ${JSON.stringify(html)})`;
            document.body.append(script);
        }""",
        IMAGE_WITHOUT_ALT,
    )

    axe_check(page_nojs)


# --- screenshots -----------------------------------------------------------


def test_screenshots_are_saved_only_when_asked(page, tmp_path, monkeypatch):
    page.goto("/admin/login/")

    directory = tmp_path / "screenshots"

    monkeypatch.delenv("SAVE_SCREENSHOTS", raising=False)
    assert save_screenshot(page, "login", directory=directory) is None
    monkeypatch.setenv("SAVE_SCREENSHOTS", "0")
    assert save_screenshot(page, "login", directory=directory) is None
    assert not directory.exists()

    monkeypatch.setenv("SAVE_SCREENSHOTS", "1")
    saved = save_screenshot(page, "login", directory=directory)

    assert saved == directory / "login.png"
    assert saved.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
