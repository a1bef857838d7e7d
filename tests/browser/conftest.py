"""Real-browser fixtures: Debian's Chromium, headless, driven by Playwright
against pytest-django's live server (a thread of the test process, on the
test database; it serves static files through the staticfiles finders).

Every test in tests/browser/ is marked `browser`. Without a Chromium at
CHROMIUM_PATH (default /usr/bin/chromium) they skip with a message, except
with CI=true, where they fail: .ci/run installs Chromium first.

Every context made here records its requests (tests/browser/network.py); a
test errors at teardown if a page loaded anything from another origin, the
server answered 5xx, or a style sheet, script, image or font failed to load.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.test import override_settings
from playwright.sync_api import Browser, BrowserContext, Page, sync_playwright
from pytest_django.live_server_helper import LiveServer

from tests.browser.axe import mark_no_script
from tests.browser.chromium import Chromium, chromium_executable
from tests.browser.network import close_checked, watch
from tests.browser.test_web_browser import PASSWORD, sign_in

HERE = Path(__file__).resolve().parent


def pytest_itemcollected(item: pytest.Item) -> None:
    """Mark every test under tests/browser/ `browser`, so -m 'not browser' leaves them out."""
    if HERE in Path(item.path).resolve().parents:
        item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="package")
def chromium() -> Iterator[Chromium]:
    """Debian's Chromium, headless, for all the browser tests.

    Package-scoped, not session-scoped: while Playwright's sync API is started
    it marks its asyncio loop as running in the main thread, so Django refuses
    ORM calls there ("cannot call this from an async context") until it stops.
    Playwright therefore lives only while tests/browser/ runs, and ORM calls
    are allowed for that long: the test code is synchronous, the loop only
    waits for the browser in between.
    """
    executable = chromium_executable()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        with sync_playwright() as playwright:
            chromium = Chromium(playwright.chromium, executable)
            yield chromium
            chromium.close()


@pytest.fixture
def browser(chromium: Chromium) -> Browser:
    """The running Chromium, started again first if it died in an earlier test."""
    return chromium.browser()


@pytest.fixture(scope="session")
def live_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """pytest-django's live server, its handler built with STATIC_ROOT at an empty folder.

    The server thread builds its middleware once, before the function-scoped
    plain_static_files fixture runs: WhiteNoise would otherwise look at the
    real STATIC_ROOT (absent in a fresh clone, so it warns). Static files come
    from the staticfiles finders either way, through the live server's
    StaticFilesHandler; database access per test is pytest-django's own
    (transactional_db, requested by its _live_server_helper).
    """
    address = request.config.getvalue("liveserver") or os.environ.get("DJANGO_LIVE_TEST_SERVER_ADDRESS") or "localhost"
    with override_settings(STATIC_ROOT=tmp_path_factory.mktemp("live-server-static")):
        server = LiveServer(address)
    yield server
    server.stop()


@pytest.fixture
def anon_context(browser: Browser, live_server) -> Iterator[Callable[..., BrowserContext]]:
    """Make fresh browser contexts (no cookies: an anonymous visitor) on the live server.

    Call it with Playwright's new_context options, e.g. anon_context(java_script_enabled=False);
    page.goto("/path") goes to the live server. Every context is closed after
    the test, and its request rules are checked.
    """
    made: list[BrowserContext] = []

    def make(**options) -> BrowserContext:
        context = browser.new_context(base_url=live_server.url, **options)
        watch(context, live_server.url)
        if options.get("java_script_enabled") is False:
            mark_no_script(context)
        made.append(context)
        return context

    yield make
    close_checked(made)


@pytest.fixture
def page(anon_context) -> Page:
    """A page in a fresh context with JavaScript on."""
    return anon_context().new_page()


@pytest.fixture
def page_nojs(anon_context) -> Page:
    """A page in a fresh context with JavaScript off, as a visitor who blocks scripts sees it."""
    return anon_context(java_script_enabled=False).new_page()


@pytest.fixture
def owner_context(anon_context, alice) -> BrowserContext:
    """A desktop-sized context in which alice has signed in."""
    context = anon_context(viewport={"width": 1280, "height": 900})
    sign_in(context.new_page(), "alice", PASSWORD)
    return context
