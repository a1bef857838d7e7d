"""An encrypted link sent without its #fragment, opened in Chromium with its
password: the page derives the key and the verifier (pages/e2e_password.js)
and lands on /s/<token>#<secret> unlocked, sending neither the password nor
the secret; a wrong password says so with the tries left; without
JavaScript the page says what opens the link. The browser module and the
command-line client derive the same bytes and open each other's wrapped
secrets."""

import os
import re
import unicodedata
from datetime import timedelta
from urllib.parse import quote, quote_plus

import pytest
from django.utils import timezone
from microcloud_cli.sealed_downloads import unwrap_secret, wrapped_parameters
from microcloud_cli.sealing import new_secret, seal_metadata, secret_text
from microcloud_cli.wrapping import b64url, derive, from_b64url, unwrap, wrap
from playwright.sync_api import expect

from sharing.models import Share, create_sealed_share
from tests.browser.helpers import axe_check, no_foreign_requests, save_screenshot
from tests.cli.commands import environment, microcloud
from tests.test_wrapped_secrets import (
    KNOWN_ITERATIONS,
    KNOWN_PASSWORD,
    KNOWN_SALT,
    KNOWN_VERIFIER,
)

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
PASSWORD = "Grüße aus Köln, 7 Brücken"
FAST = 100_000

UNLOCK = """async ([password, parameters]) => {
    const unlocked = await microcloudE2EPassword.unlock(password, parameters);
    return unlocked.verifier;
}"""
OPEN = """async ([password, parameters, wrapped]) => {
    const unlocked = await microcloudE2EPassword.unlock(password, parameters);
    return microcloudECE.secretText(await unlocked.open(wrapped));
}"""
WRAP = """async ([secret, password, iterations]) =>
    microcloudE2EPassword.wrap(microcloudECE.secretFromText(secret), password, iterations)"""


@pytest.fixture
def cli_env(tmp_path, live_server, alice):
    return environment(tmp_path / "home", live_server.url, alice)


@pytest.fixture
def wrapped_share(alice, make_file) -> Share:
    """A wrapped link made here (not through the command), for the module checks."""
    stored = make_file(alice, name="encrypted-1", data=os.urandom(100), content_type="application/octet-stream")
    secret = new_secret()
    verifier, wrapped = wrap(secret, PASSWORD, FAST)
    return create_sealed_share(
        sealed_metadata=from_b64url(seal_metadata(secret, [{"name": "a.txt", "type": "text/plain", "size": 100}])),
        wrapped_secret=from_b64url(wrapped),
        files=[stored],
        expires_at=timezone.now() + timedelta(hours=1),
        password=verifier,
    )


def put_with_password(cli_env, tmp_path) -> str:
    source = tmp_path / "minutes.txt"
    source.write_text("The board met on Monday.\n" * 100)
    done = microcloud(cli_env, "put", "-q", "--encrypt", "--password", PASSWORD, str(source))
    link = done.stdout.strip().splitlines()[-1]
    assert "#" not in link
    return link


def everything_sent(requests: list, cookies: list) -> str:
    """Every URL, header, body and cookie the browser sent, as one text to search.

    The headers are the ones the page asked for (`request.headers`), with the
    context's cookies beside them: `all_headers()` waits for the network's own
    copy, which a request Chromium starts and never finishes (its favicon)
    does not get, and the test would hang on it."""
    parts = [f"{cookie['name']}={cookie['value']}" for cookie in cookies]
    for request in requests:
        parts.append(request.url)
        parts.extend(f"{name}: {value}" for name, value in request.headers.items())
        body = request.post_data_buffer
        if body:
            parts.append(body.decode("latin-1"))
    return "\n".join(parts)


def test_the_password_lands_on_the_link_with_its_secret_and_sends_neither(anon_context, cli_env, tmp_path):
    link = put_with_password(cli_env, tmp_path)
    secret = secret_text(unwrap_secret(link, wrapped_parameters(link), PASSWORD)[0])
    context = anon_context(viewport=DESKTOP)
    requests = []
    context.on("request", lambda request: requests.append(request))
    page = context.new_page()
    page.goto(link)
    expect(page.get_by_role("heading", name="This link is protected by a password")).to_be_visible()
    expect(page.locator("[data-needs-script]")).to_be_hidden()
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Unlock").click()
    page.wait_for_url(re.compile(r"#"))

    path, fragment = page.url.split("#")
    assert path == link
    assert fragment == secret
    expect(page.get_by_role("heading", name="This link is protected by a password")).to_have_count(0)
    sent = everything_sent(requests, context.cookies())
    assert "/key" in sent
    assert "password=" in sent  # the verifier was posted
    # Raw, percent-encoded (a URL, a form body), or UTF-8 bytes read as Latin-1 (a header).
    spellings = {PASSWORD, quote(PASSWORD), quote_plus(PASSWORD), PASSWORD.encode().decode("latin-1"), secret}
    for never in spellings:
        assert never not in sent
    no_foreign_requests(page)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_a_wrong_password_says_so_with_the_tries_left(anon_context, cli_env, tmp_path, viewport):
    link = put_with_password(cli_env, tmp_path)
    page = anon_context(viewport=viewport).new_page()
    page.goto(link)
    expect(page.get_by_label("Password")).to_be_visible()
    axe_check(page)
    name = "phone" if viewport is PHONE else "desktop"
    save_screenshot(page, f"link-wrapped-locked-{name}")
    page.get_by_label("Password").fill("Grüße aus Köln, 8 Brücken")
    page.get_by_role("button", name="Unlock").click()
    expect(page.get_by_role("alert")).to_have_text("Wrong password. Try again. 9 tries left before a pause.")
    expect(page.get_by_label("Password")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_role("button", name="Unlock")).to_be_enabled()
    assert "#" not in page.url
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    axe_check(page)
    save_screenshot(page, f"link-wrapped-wrong-{name}")
    page.emulate_media(color_scheme="dark")
    axe_check(page)
    save_screenshot(page, f"link-wrapped-wrong-{name}-dark")


def test_without_javascript_the_page_says_what_opens_the_link(page_nojs, wrapped_share):
    page_nojs.goto(f"/s/{wrapped_share.token}")
    expect(page_nojs.get_by_text("its password is also its key")).to_be_visible()
    expect(page_nojs.get_by_text("microcloud get followed by the link")).to_be_visible()
    # The form is not offered: it would post the raw password to no purpose.
    expect(page_nojs.get_by_label("Password")).to_be_hidden()
    expect(page_nojs.get_by_role("button", name="Unlock")).to_be_hidden()
    axe_check(page_nojs)
    save_screenshot(page_nojs, "link-wrapped-no-script")


def test_the_browser_module_derives_the_known_answer(page, wrapped_share):
    page.goto(f"/s/{wrapped_share.token}")
    parameters = {"kdf": "PBKDF2-SHA256", "iterations": KNOWN_ITERATIONS, "salt": b64url(KNOWN_SALT)}
    assert page.evaluate(UNLOCK, [KNOWN_PASSWORD, parameters]) == KNOWN_VERIFIER
    decomposed = unicodedata.normalize("NFD", KNOWN_PASSWORD)
    assert page.evaluate(UNLOCK, [decomposed, parameters]) == KNOWN_VERIFIER


def test_the_browser_and_the_client_open_each_others_wrapped_secrets(page, wrapped_share):
    page.goto(f"/s/{wrapped_share.token}")
    secret = new_secret()

    # Wrapped in Python, opened in the browser.
    verifier, wrapped = wrap(secret, PASSWORD, FAST)
    raw = from_b64url(wrapped)
    parameters = {"kdf": "PBKDF2-SHA256", "iterations": FAST, "salt": b64url(raw[5:21])}
    assert page.evaluate(UNLOCK, [PASSWORD, parameters]) == verifier
    assert page.evaluate(OPEN, [PASSWORD, parameters, wrapped]) == secret_text(secret)
    refused = page.evaluate(
        """async ([password, parameters, wrapped]) => {
            const unlocked = await microcloudE2EPassword.unlock(password, parameters);
            try { await unlocked.open(wrapped); return "opened"; } catch (error) { return error.name; }
        }""",
        ["another password", parameters, wrapped],
    )
    assert refused == "Damaged"

    # Wrapped in the browser, opened in Python.
    made = page.evaluate(WRAP, [secret_text(secret), PASSWORD, FAST])
    raw = from_b64url(made["wrappedSecret"])
    assert (len(raw), raw[0], int.from_bytes(raw[1:5], "big")) == (65, 1, FAST)
    derived = derive(PASSWORD, raw[5:21], FAST)
    assert derived.verifier == made["verifier"]
    assert unwrap(made["wrappedSecret"], derived.key) == secret
