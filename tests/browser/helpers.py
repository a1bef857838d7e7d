"""What browser tests call: log in, check a page, save a screenshot.

Import from here: `from tests.browser.helpers import axe_check, login, ...`.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote, urlsplit

from django.contrib.auth.models import AbstractBaseUser
from playwright.sync_api import Page

from tests.browser.axe import axe_check
from tests.browser.network import no_broken_requests, no_foreign_requests, request_log
from tests.helpers import REPO_ROOT

__all__ = [
    "axe_check",
    "is_true",
    "login",
    "no_broken_requests",
    "no_foreign_requests",
    "request_log",
    "save_screenshot",
    "submit_admin_login",
    "unloaded_stylesheets",
]

SCREENSHOT_DIR = REPO_ROOT / "docs" / "screenshots"
# The values .ci/run and .ci/pytest-postgres take as true for CI.
TRUE_WORDS = frozenset({"true", "TRUE", "True", "1", "yes"})


def is_true(value: str | None) -> bool:
    """Read an environment flag the way .ci/run reads CI."""
    return value in TRUE_WORDS


def submit_admin_login(page: Page, user: AbstractBaseUser | str, password: str, next_path: str = "/admin/") -> None:
    """Fill in and send the admin login form, as a person would."""
    username = user if isinstance(user, str) else user.get_username()
    page.goto(f"/admin/login/?next={quote(next_path)}")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    with page.expect_navigation():
        page.get_by_role("button", name="Log in").click()


def login(page: Page, user: AbstractBaseUser | str, password: str, next_path: str = "/admin/") -> None:
    """Log in through the admin login form and fail unless it lands on `next_path`."""
    submit_admin_login(page, user, password, next_path)
    landed = urlsplit(page.url).path
    if landed != next_path:
        errors = page.locator(".errornote")
        said = " ".join(errors.all_inner_texts()) if errors.count() else "no error shown"
        raise AssertionError(f"admin login failed: at {landed} instead of {next_path} ({said})")


def unloaded_stylesheets(page: Page) -> list[str]:
    """Return the href of every linked style sheet that did not load or holds no rules."""
    return page.evaluate(
        """() => [...document.querySelectorAll('link[rel~="stylesheet"]')]
            .filter((link) => !link.sheet || link.sheet.cssRules.length === 0)
            .map((link) => link.href)"""
    )


def save_screenshot(page: Page, name: str, *, directory: Path | None = None) -> Path | None:
    """With SAVE_SCREENSHOTS=1, write the whole page to docs/screenshots/<name>.png.

    Without it, do nothing and return None: screenshots are for the docs, and
    the suite passes either way.
    """
    if not is_true(os.environ.get("SAVE_SCREENSHOTS")):
        return None
    target = (directory or SCREENSHOT_DIR) / f"{name}.png"
    target.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=target, full_page=True)
    return target
