"""Which Chromium the browser tests drive, and what happens without one."""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Mapping
from pathlib import Path

import playwright
import pytest
from playwright.sync_api import Browser, BrowserType
from playwright.sync_api import Error as PlaywrightError

from tests.browser.helpers import is_true

DEFAULT_CHROMIUM = "/usr/bin/chromium"  # Debian's package `chromium`
# The browser builds this Playwright release was made for (it downloads none here).
BUNDLED_BROWSERS = Path(playwright.__file__).parent / "driver" / "package" / "browsers.json"
LAUNCH_ATTEMPTS = 3


def chromium_executable(environ: Mapping[str, str] = os.environ) -> str:
    """Return the Chromium to drive; skip the test without one, or fail under CI=true."""
    path = environ.get("CHROMIUM_PATH") or DEFAULT_CHROMIUM
    if os.path.isfile(path) and os.access(path, os.X_OK):
        return path
    problem = f"no Chromium at {path}: install Debian's chromium and chromium-driver, or set CHROMIUM_PATH"
    if is_true(environ.get("CI")):
        pytest.fail(f"{problem}. CI=true requires the browser tests to run (.ci/run installs it).", pytrace=False)
    pytest.skip(f"browser test skipped, {problem}")


def bundled_chromium_version() -> str:
    builds = json.loads(BUNDLED_BROWSERS.read_text())["browsers"]
    return next(build["browserVersion"] for build in builds if build["name"] == "chromium")


def warn_on_version_gap(version: str) -> None:
    """Warn when Debian's Chromium drifts from the major version this Playwright was built for.

    Playwright speaks the DevTools protocol, which changes slowly: a gap of a
    release or two usually works, so this is a hint for when tests misbehave.
    """
    bundled = bundled_chromium_version()
    if version.split(".")[0] != bundled.split(".")[0]:
        warnings.warn(
            f"Chromium {version} is driven by a Playwright built for Chromium {bundled}; "
            "if browser tests misbehave, pin the playwright release made for this Chromium",
            stacklevel=1,
        )


class Chromium:
    """One headless Chromium, started when first asked for and again after it died.

    Chromium has crashed (SIGTRAP) while the rest of the suite loaded the
    machine; with one browser for the whole package, every later browser test
    of that worker then errored too. Asked for per test, a dead browser costs
    at most the test it died in, and a start that fails is tried again with
    the failure shown as a warning.
    """

    def __init__(self, launcher: BrowserType, executable: str, *, attempts: int = LAUNCH_ATTEMPTS):
        self.launcher = launcher
        self.executable = executable
        self.attempts = attempts
        self.launches = 0
        self._browser: Browser | None = None

    def browser(self) -> Browser:
        """The running browser; a new one if there is none yet or it died."""
        if self._browser is None or not self._browser.is_connected():
            self._browser = self._launch()
        return self._browser

    def _launch(self) -> Browser:
        for attempt in range(1, self.attempts):
            try:
                return self._start()
            except PlaywrightError as error:
                warnings.warn(
                    f"Chromium did not start (attempt {attempt} of {self.attempts}); starting it again: {error}",
                    stacklevel=1,
                )
        return self._start()  # the last attempt's failure is raised

    def _start(self) -> Browser:
        browser = self.launcher.launch(executable_path=self.executable, headless=True)
        self.launches += 1
        warn_on_version_gap(browser.version)
        return browser

    def close(self) -> None:
        if self._browser is not None and self._browser.is_connected():
            self._browser.close()
