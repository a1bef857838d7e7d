"""An encrypted link's page in Chromium: it opens the sealed metadata with
the key in the link's #fragment, lists the real names, sizes, types and the
note, and downloads each file decrypted through its service worker,
byte-identical to what the client encrypted; the key never reaches the
server; a missing or wrong key, and a file altered on the server's disk,
are each said plainly; images preview in place; axe-core passes."""

from __future__ import annotations

import hashlib
import random
import tempfile
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from pages.units import file_size
from tests.browser.encrypted_links import EncryptedLink, Original, make_encrypted_link
from tests.browser.helpers import axe_check, request_log, save_screenshot
from tests.browser.test_multi_file_browser import png

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
MESSAGE = "Read before Monday.\nThe numbers are in the second file."
# SAVE_SCREENSHOTS=1 writes the pages here, to look at (not kept in the repository).
SHOTS = Path(tempfile.gettempdir()) / "microcloud-receive-screenshots"
DAMAGED = "Record {n} does not decrypt: the file was altered or the key is wrong."


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.fixture
def originals(tmp_path) -> list[Original]:
    rng = random.Random(20261207)
    # Across record boundaries: three whole records and a part of a fourth.
    text = ("Minutes of the week, é and ü.\n" * 7000).encode()
    data = rng.randbytes(3 * 65519 + 1234)
    return [
        Original("Minutes — week 12.txt", "text/plain", write(tmp_path / "minutes.txt", text)),
        Original("numbers.bin", "application/octet-stream", write(tmp_path / "numbers.bin", data)),
    ]


@pytest.fixture
def link(alice, alice_client, originals, tmp_path) -> EncryptedLink:
    return make_encrypted_link(alice_client, alice, originals, tmp_path, message=MESSAGE)


def open_link(page: Page, url: str) -> None:
    page.goto(url)
    expect(page.locator("[data-receive-status]")).to_be_hidden()


def download(page: Page, name: str, target: Path) -> bytes:
    with page.expect_download() as started:
        page.get_by_role("button", name=f"Download {name}").click()
    saved = started.value
    assert saved.suggested_filename == name
    saved.save_as(target)
    assert saved.failure() is None
    return target.read_bytes()


def test_chromium_decrypts_what_the_client_encrypted(anon_context, link, originals, tmp_path):
    page = anon_context(viewport=DESKTOP).new_page()
    open_link(page, link.url)

    items = page.locator(".file-list li")
    expect(items).to_have_count(2)
    for item, original in zip(items.all(), originals, strict=True):
        expect(item.locator(".file-name")).to_have_text(original.name)
        size = file_size(original.path.stat().st_size)
        expect(item.locator(".file-facts")).to_have_text(f"{size} · {original.type}")
    expect(page.locator("[data-receive-message] blockquote")).to_have_text(MESSAGE)
    expect(page.get_by_role("heading", level=1)).to_have_text("Encrypted files")

    for position, original in enumerate(originals, start=1):
        saved = download(page, original.name, tmp_path / f"saved-{position}")
        assert hashlib.sha256(saved).digest() == hashlib.sha256(original.path.read_bytes()).digest()
        expect(items.nth(position - 1).locator(".file-status")).to_have_text("Downloaded.")

    urls = request_log(page).urls
    assert any(f"/s/{link.token}/sealed" in url for url in urls)
    assert not [url for url in urls if link.secret in url]


def test_a_missing_key_and_a_wrong_one_are_said_plainly(anon_context, link):
    page = anon_context(viewport=DESKTOP).new_page()
    page.goto(f"/s/{link.token}")
    expect(page.locator("[data-receive-status]")).to_have_text(
        "This link's key is missing: the part after # was not copied. Ask the sender for the whole link."
    )
    expect(page.locator(".file-list li")).to_have_count(0)

    wrong = "A" * 22  # a key of the right form, not this link's
    page.goto(f"/s/{link.token}#{wrong}")
    page.reload()
    expect(page.locator("[data-receive-status]")).to_have_text(
        "The key in this link does not open its files: check that the whole link was copied."
    )
    page.goto(f"/s/{link.token}#{link.secret[:-3]}")
    page.reload()
    expect(page.locator("[data-receive-status]")).to_have_text(
        "The key in this link does not open its files: check that the whole link was copied."
    )
    expect(page.locator(".file-list li")).to_have_count(0)


def test_without_javascript_the_page_says_what_opens_it(anon_context, link):
    page = anon_context(java_script_enabled=False, viewport=PHONE).new_page()
    page.goto(link.url)
    text = page.locator("main").inner_text()
    assert "needs JavaScript" in text
    assert "microcloud get" in text
    assert "encrypted-1" not in page.content()
    axe_check(page)


def test_an_image_previews_after_decryption(anon_context, alice, alice_client, tmp_path):
    image = Original("Holiday photo.png", "image/png", write(tmp_path / "photo.png", png(40, 30)))
    link = make_encrypted_link(alice_client, alice, [image], tmp_path)
    page = anon_context(viewport=DESKTOP).new_page()
    open_link(page, link.url)
    preview = page.get_by_role("img", name="Preview of Holiday photo.png")
    expect(preview).to_be_visible()
    assert preview.get_attribute("src").startswith("blob:")
    assert preview.evaluate("(img) => [img.naturalWidth, img.naturalHeight]") == [40, 30]
    expect(page.get_by_role("heading", level=1)).to_have_text("Holiday photo.png")
    link.share.refresh_from_db()
    assert link.share.total_downloads == 0  # a preview is not a download


def test_an_altered_record_stops_the_download_and_the_page_says_which(anon_context, link, originals, tmp_path):
    stored = Path(link.share.files[1].content.path)
    body = bytearray(stored.read_bytes())
    body[21 + 2 * 65536 + 100] ^= 0x01  # one bit of record 2's ciphertext
    stored.write_bytes(bytes(body))
    page = anon_context(viewport=DESKTOP).new_page()
    open_link(page, link.url)

    with page.expect_download() as started:
        page.get_by_role("button", name=f"Download {originals[1].name}").click()
    assert started.value.failure() is not None  # the browser keeps no file
    status = page.locator(".file-list li").nth(1).locator(".file-status")
    expect(status).to_have_text(DAMAGED.format(n=2))
    axe_check(page)
    save_screenshot(page, "receive-damaged", directory=SHOTS)

    # The other file, untouched, still downloads whole.
    saved = download(page, originals[0].name, tmp_path / "saved-1")
    assert saved == originals[0].path.read_bytes()


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_pages_states_pass_axe(anon_context, alice, alice_client, originals, tmp_path, viewport, scheme):
    image = Original("Holiday photo.png", "image/png", write(tmp_path / "photo.png", png(400, 240)))
    link = make_encrypted_link(alice_client, alice, [*originals, image], tmp_path, message=MESSAGE)
    page = anon_context(viewport=viewport, color_scheme=scheme).new_page()
    name = f"receive-{viewport['width']}-{scheme}"

    open_link(page, link.url)
    expect(page.get_by_role("img", name="Preview of Holiday photo.png")).to_be_visible()
    download(page, originals[0].name, tmp_path / "saved")
    axe_check(page)
    save_screenshot(page, f"{name}-files", directory=SHOTS)

    page.goto(f"/s/{link.token}")
    expect(page.locator("[data-receive-status]")).to_contain_text("key is missing")
    axe_check(page)
    save_screenshot(page, f"{name}-missing", directory=SHOTS)

    page.goto(f"/s/{link.token}#{'A' * 22}")
    page.reload()
    expect(page.locator("[data-receive-status]")).to_contain_text("does not open its files")
    axe_check(page)
    save_screenshot(page, f"{name}-wrong", directory=SHOTS)


def test_behind_a_password_the_page_works_once_unlocked(anon_context, alice, alice_client, originals, tmp_path):
    link = make_encrypted_link(alice_client, alice, originals[:1], tmp_path, password="blue kite")
    page = anon_context(viewport=DESKTOP).new_page()
    page.goto(link.url)
    expect(page.locator("[data-receive]")).to_have_count(0)
    page.get_by_label("Password").fill("blue kite")
    with page.expect_navigation():
        page.get_by_role("button", name="Unlock").click()
    # Where the unlocking script lands: the page with its key, and the cookie.
    open_link(page, link.url)
    saved = download(page, originals[0].name, tmp_path / "saved")
    assert saved == originals[0].path.read_bytes()
