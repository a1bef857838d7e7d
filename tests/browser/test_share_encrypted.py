"""The "Share encrypted files" page in Chromium (web/share_encrypted.html,
web/static/web/encrypted_share.js): the files are encrypted in the browser as
tus reads them, the link is made through the API with sealed metadata, and
nothing the server receives or keeps holds a name, the key or a run of
plaintext. Python code we did not write (http_ece) decrypts what Chromium
encrypted, and the command-line client's open_metadata opens its metadata.
The owner's browser shows the real names from IndexedDB; another browser of
the same owner shows "encrypted files" and says where the key lives."""

from __future__ import annotations

import base64
import hashlib
import random
from pathlib import Path
from urllib.parse import unquote_to_bytes

import http_ece
from microcloud_cli.sealing import CONTENT_INFO, derive, open_metadata, secret_from_text
from playwright.sync_api import BrowserContext, Page, Request, Route, expect

from sharing.models import Share, sealed_metadata_of
from tests.browser.helpers import axe_check, save_screenshot
from tests.browser.test_web_browser import PASSWORD, sign_in
from tests.cli.test_client_encrypted import assert_the_database_never_holds

MiB = 1024 * 1024
TEXT_NAME = "board-minutes-confidential.txt"
BINARY_NAME = "scan-of-the-contract.bin"
MESSAGE = "Read before Monday's meeting"
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}


# Playwright sees no body sent as a Blob (tus's PATCH chunks): the page
# notes each one's offset, size and SHA-256 as it goes to XMLHttpRequest, and
# the test finds those bytes in the stored ciphertext, which it searches.
RECORD_BLOB_BODIES = """(() => {
  const send = XMLHttpRequest.prototype.send;
  const setHeader = XMLHttpRequest.prototype.setRequestHeader;
  window.blobBodies = [];
  XMLHttpRequest.prototype.setRequestHeader = function (name, value) {
    (this.sentHeaders = this.sentHeaders || {})[name.toLowerCase()] = value;
    return setHeader.call(this, name, value);
  };
  XMLHttpRequest.prototype.send = function (body) {
    if (body instanceof Blob) {
      const offset = Number((this.sentHeaders || {})["upload-offset"]);
      window.blobBodies.push(body.arrayBuffer().then((bytes) => crypto.subtle.digest("SHA-256", bytes)).then(
        (digest) => ({
          offset: offset,
          size: body.size,
          sha256: [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, "0")).join(""),
        })
      ));
    }
    return send.call(this, body);
  };
})();"""


def record_everything(context: BrowserContext) -> list[Request]:
    """Every request of the context from now on (its URL, headers and body)."""
    context.add_init_script(RECORD_BLOB_BODIES)
    seen: list[Request] = []
    context.on("request", lambda request: seen.append(request))
    return seen


def blob_bodies_are_stored_slices(page: Page, stored: list[bytes]) -> int:
    """Check that every Blob the page sent is a slice of a stored file at its
    offset; return how many bytes they held."""
    bodies = page.evaluate("() => Promise.all(window.blobBodies)")
    for body in bodies:
        start, end = body["offset"], body["offset"] + body["size"]
        assert body["sha256"] in {hashlib.sha256(blob[start:end]).hexdigest() for blob in stored}, body
    return sum(body["size"] for body in bodies)


def fill_in(page: Page, files: list[Path], *, password: str = "") -> None:
    """Fill in the page and press its one button."""
    page.goto("/files/encrypted/")
    page.get_by_label("Files to encrypt").set_input_files(files)
    page.get_by_label("1 day").check()
    page.get_by_label("Download limit").fill("3")
    if password:
        page.get_by_label("Password").fill(password)
    page.get_by_label("Message to the recipient").fill(MESSAGE)
    page.get_by_role("button", name="Encrypt, upload and make the link").click()


def share_encrypted(page: Page, files: list[Path]) -> str:
    """Share the files encrypted; return the link shown."""
    fill_in(page, files)
    expect(page.get_by_role("heading", name="Your encrypted link")).to_be_visible(timeout=60_000)
    return page.locator("#encrypted-link").input_value()


class PlainRuns:
    """Whether bytes hold any 64 bytes of `plain` in a row: every such run
    holds a whole aligned 32-byte block of it (as tests/cli's holds_a_run_of,
    with the blocks gathered once for many searches)."""

    def __init__(self, plain: bytes, run: int = 64):
        self.half = run // 2
        self.blocks = {plain[i : i + self.half] for i in range(0, len(plain) - self.half + 1, self.half)}

    def found_in(self, data: bytes) -> bool:
        half, blocks = self.half, self.blocks
        return any(data[i : i + half] in blocks for i in range(len(data) - half + 1))


def headers_of(request: Request) -> bytes:
    """Its headers, and tus's Upload-Metadata decoded (each value is base64)."""
    headers = repr(sorted(request.headers.items())).encode()
    pairs = [pair.split(" ") for pair in request.headers.get("upload-metadata", "").split(",") if pair]
    return b" ".join([headers, *(base64.b64decode(pair[1]) for pair in pairs if len(pair) == 2)])


def stored_bytes(share: Share) -> list[bytes]:
    return [Path(stored.content.path).read_bytes() for stored in share.files]


def test_two_files_shared_encrypted_leave_no_name_key_or_plaintext_and_decrypt_elsewhere(
    owner_context, anon_context, tmp_path
):
    text = tmp_path / TEXT_NAME
    text.write_bytes(b"The minutes of the board, item 1: " + b"confidential. " * 3000)
    binary = tmp_path / BINARY_NAME
    binary.write_bytes(random.Random(7).randbytes(20 * MiB + 4321))
    seen = record_everything(owner_context)
    page = owner_context.new_page()

    link = share_encrypted(page, [text, binary])

    base, secret_text = link.split("#")
    share = Share.objects.get(token=base.rstrip("/").rsplit("/", 1)[-1])
    assert [stored.name for stored in share.files] == ["encrypted-1", "encrypted-2"]
    assert {stored.content_type for stored in share.files} == {"application/octet-stream"}
    assert share.message == ""
    assert share.max_downloads == 3
    secret = secret_from_text(secret_text)

    # Nothing sent holds the key, a name, the note or a run of either file's
    # plaintext; the chunks sent are the stored ciphertext, searched below.
    stored = stored_bytes(share)
    assert blob_bodies_are_stored_slices(page, stored) >= sum(map(len, stored))
    secrets = [secret_text.encode(), secret, TEXT_NAME.encode(), BINARY_NAME.encode(), MESSAGE.encode()]
    runs = [PlainRuns(plain.read_bytes()) for plain in (text, binary)]
    secrets += [encoded(value) for value in secrets for encoded in (base64.b64encode, base64.urlsafe_b64encode)]
    for request in seen:
        body = request.post_data_buffer or b""
        sent = b" ".join([request.url.encode(), unquote_to_bytes(request.url), headers_of(request), body])
        assert not [value for value in secrets if value in sent], request.url
        assert not any(run.found_in(body) for run in runs), request.url
    assert any(b"sealed_metadata" in (request.post_data_buffer or b"") for request in seen)

    # Nor does anything the server keeps.
    for run, blob in zip(runs, stored, strict=True):
        assert not run.found_in(blob)
    assert_the_database_never_holds(TEXT_NAME, BINARY_NAME, MESSAGE, secret_text)

    # An implementation we did not write decrypts what Chromium encrypted.
    key = derive(secret, CONTENT_INFO)
    for plain, blob in zip((text, binary), stored, strict=True):
        assert http_ece.decrypt(blob, key=key, version="aes128gcm") == plain.read_bytes()
    document = open_metadata(secret, sealed_metadata_of(share))
    assert document["message"] == MESSAGE
    assert document["files"] == [
        {"name": TEXT_NAME, "type": "text/plain", "size": text.stat().st_size},
        {"name": BINARY_NAME, "type": "application/octet-stream", "size": binary.stat().st_size},
    ]

    # The owner's own browser names the files from IndexedDB, and shows the
    # whole link on the share's page.
    page.goto("/")
    row = page.locator(f'[data-sealed-share="{share.pk}"]')
    expect(row).to_have_attribute("data-sealed-shown", "true")
    expect(row.locator("[data-sealed-name]")).to_have_text(f"{TEXT_NAME}, {BINARY_NAME}")
    expect(row.locator("button.copy")).to_have_attribute("data-copy-text", link)
    assert row.locator("a.token").evaluate("(a) => a.href") == link
    page.goto(f"/shares/{share.pk}/")
    expect(page.locator("#share-link")).to_have_value(link)
    expect(page.locator('[data-sealed-file="2"]')).to_have_text(BINARY_NAME)
    expect(page.locator("[data-sealed-message]")).to_have_text(MESSAGE)

    # Another browser of the same owner has no key: neutral names, and the
    # page says where the key lives.
    other = anon_context(viewport=DESKTOP).new_page()
    sign_in(other, "alice", PASSWORD)
    row = other.locator(f'[data-sealed-share="{share.pk}"]')
    expect(row).to_have_attribute("data-sealed-shown", "false")
    expect(row.locator("[data-sealed-name]")).to_have_text("2 encrypted files")
    expect(row.locator("button.copy")).to_have_attribute("data-copy-text", base)
    other.goto(f"/shares/{share.pk}/")
    expect(other.locator("[data-sealed-share]")).to_have_attribute("data-sealed-shown", "false")
    expect(other.locator("#share-link")).to_have_value(base)
    expect(other.locator("#sealed-key-note")).to_contain_text("lives only in the browser that made the link")
    for name in (TEXT_NAME, BINARY_NAME, MESSAGE):
        assert name not in other.content()


def test_the_page_passes_axe_at_both_widths_and_says_what_it_needs_without_javascript(
    owner_context, anon_context, tmp_path
):
    page = owner_context.new_page()
    for viewport, name in ((PHONE, "phone"), (DESKTOP, "desktop")):
        page.set_viewport_size(viewport)
        page.goto("/files/encrypted/")
        expect(page.get_by_role("button", name="Encrypt, upload and make the link")).to_be_visible()
        expect(page.locator("#encrypted-unsupported")).to_be_hidden()
        axe_check(page)
        assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
        save_screenshot(page, f"web-share-encrypted-{name}")
    note = tmp_path / "note.txt"
    note.write_text("A short note.\n")
    link = share_encrypted(page, [note])
    assert "#" in link
    expect(page.locator("#encrypted-link-note")).to_contain_text("Anyone with this whole link can open the files")
    expect(page.get_by_role("button", name="Copy")).to_be_visible()
    axe_check(page)
    save_screenshot(page, "web-share-encrypted-link")

    # As on a page served over plain HTTP, where browsers give no WebCrypto.
    insecure = anon_context(viewport=PHONE)
    insecure.add_init_script("Object.defineProperty(window.crypto, 'subtle', { value: undefined });")
    without = insecure.new_page()
    sign_in(without, "alice", PASSWORD)
    without.goto("/files/encrypted/")
    expect(without.locator("#encrypted-unsupported")).to_contain_text("a browser that can encrypt (WebCrypto")
    expect(without.locator("#encrypted-form")).to_be_hidden()

    bare = anon_context(java_script_enabled=False, viewport=PHONE).new_page()
    sign_in_without_script(bare)
    bare.goto("/files/encrypted/")
    expect(bare.locator("#encrypted-unsupported")).to_contain_text("Encrypting in the browser needs JavaScript")
    expect(bare.locator("#encrypted-form")).to_be_hidden()
    axe_check(bare)
    bare.get_by_role("link", name="Upload the files the usual way").click()
    expect(bare.get_by_role("heading", name="Upload files")).to_be_visible()


def sign_in_without_script(page: Page) -> None:
    page.goto("/login/")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Your files and links")).to_be_visible()


def test_a_password_sends_a_verifier_and_the_wrapped_secret_never_the_password_or_note(owner_context, tmp_path):
    """The browser's half of a password-wrapped link. The API field
    wrapped_secret is another change's: once both are in, the link is made
    and shown without its #fragment (the integrator's end-to-end test)."""
    page = owner_context.new_page()
    sent = []

    def note_body(route: Route) -> None:
        sent.append(route.request.post_data_json)
        route.continue_()

    page.route("**/api/shares/", note_body)
    note = tmp_path / "note.txt"
    note.write_text("A short note.\n")
    with page.expect_response("**/api/shares/"):
        fill_in(page, [note], password="correct horse")
    (body,) = sent
    assert set(body) >= {"files", "expires_in", "sealed_metadata", "password", "wrapped_secret"}
    assert "message" not in body
    assert body["password"] != "correct horse"
    assert len(secret_from_text(body["password"])) == 16  # the verifier: 16 bytes, URL-safe base64
    wrapped = base64.urlsafe_b64decode(body["wrapped_secret"] + "=" * (-len(body["wrapped_secret"]) % 4))
    assert len(wrapped) == 65
    assert wrapped[0] == 1


def test_what_the_link_cannot_be_is_said_before_or_after_the_files_go(owner_context, tmp_path):
    page = owner_context.new_page()
    page.goto("/files/encrypted/")
    error = page.locator("#encrypted-error")
    page.get_by_role("button", name="Encrypt, upload and make the link").click()
    expect(error).to_have_text("Choose at least one file to share.")
    note = tmp_path / "note.txt"
    note.write_text("A short note.\n")
    page.get_by_label("Files to encrypt").set_input_files([note])
    page.get_by_label("A date and time").check()
    page.get_by_role("button", name="Encrypt, upload and make the link").click()
    expect(error).to_have_text("Pick the date and time the link should end.")
    page.get_by_label("End date and time").fill("2001-01-01T10:00")
    page.get_by_role("button", name="Encrypt, upload and make the link").click()
    expect(error).to_have_text("That time has already passed; pick one in the future.")
    expect(page.locator("#upload-progress li")).to_have_count(0)  # nothing was sent
    # What only the server knows (its longest lifetime) comes back from the API, named.
    page.get_by_label("End date and time").fill("2999-01-01T10:00")
    page.get_by_role("button", name="Encrypt, upload and make the link").click()
    expect(error).to_contain_text("The files were sent, but the link could not be made:")
    expect(error).to_contain_text("maximum lifetime")
    expect(page.get_by_role("button", name="Encrypt, upload and make the link")).to_be_enabled()
    axe_check(page)
