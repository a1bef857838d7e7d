"""A link of several files in Chromium: the recipient's page lists them with
previews, passes axe-core at desktop and phone widths without sideways
scrolling, works without JavaScript ("Download all" saves a zip that Python's
zipfile checks), and a preview of an uploaded HTML or SVG file never runs
the script inside it."""

import hashlib
import struct
import zipfile
import zlib
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from sharing.models import Share, StoredFile
from tests.browser.helpers import axe_check, no_foreign_requests, save_screenshot
from tests.browser.test_web_browser import PASSWORD, show_files, sign_in

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}


def png(width: int, height: int) -> bytes:
    """A red `width` x `height` PNG: a real image for the browser to decode."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


PNG = png(2, 2)
# What an attacker would upload: each piece of script asks the server for a
# path of its own, so a request to any of them means it ran.
HTML = (
    b"<!doctype html><title>pwned</title><script>fetch('/pwned-html-script');alert('html')</script>"
    b"<img src='/pwned-html-img' onerror=\"fetch('/pwned-html-onerror')\">"
)
SVG = (
    b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10" onload="fetch(\'/pwned-svg-onload\')">'
    b"<script>fetch('/pwned-svg-script');alert('svg')</script><rect width='10' height='10' fill='blue'/></svg>"
)
NAMES_AND_TYPES = [
    ("Holiday photo.png", PNG, "image/png"),
    ("Read me — notes.txt", "Plain text, é and ü.\n".encode() * 20, "text/plain"),
    ("page.html", HTML, "text/html"),
    ("drawing.svg", SVG, "image/svg+xml"),
]


@pytest.fixture
def share(alice, make_file) -> Share:
    files = [make_file(alice, name, data, kind) for name, data, kind in NAMES_AND_TYPES]
    return Share.create_for(files=files, expires_at=timezone.now() + timedelta(hours=1))


def pwned(urls: list[str]) -> list[str]:
    return [url for url in urls if "/pwned" in url]


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_page_lists_the_files_with_previews_and_passes_axe(anon_context, share, viewport):
    page = anon_context(viewport=viewport).new_page()
    requested = []
    page.on("request", lambda request: requested.append(request.url))
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))

    page.goto(f"/s/{share.token}")

    expect(page.get_by_role("heading", name="Holiday photo.png and 3 more files")).to_be_visible()
    items = page.locator(".file-list li")
    expect(items).to_have_count(4)
    for position, (name, _, _) in enumerate(NAMES_AND_TYPES, start=1):
        expect(items.nth(position - 1).locator(".file-name")).to_have_text(name)
        link = page.get_by_role("link", name=f"Download {name}")
        expect(link).to_have_attribute("href", f"/s/{share.token}/files/{position}")
    photo = page.get_by_role("img", name="Preview of Holiday photo.png")
    expect(photo).to_be_visible()
    page.wait_for_function("img => img.complete && img.naturalWidth === 2", arg=photo.element_handle())
    drawing = page.get_by_role("img", name="Preview of drawing.svg")
    page.wait_for_function("img => img.complete && img.naturalWidth === 10", arg=drawing.element_handle())
    expect(page.get_by_role("link", name="Download all")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
    axe_check(page)
    save_screenshot(page, f"link-several-files-{viewport['width']}")
    assert pwned(requested) == []
    assert dialogs == []
    no_foreign_requests(page)


def test_download_all_without_javascript_saves_a_zip_of_every_file(page_nojs, share, tmp_path):
    page_nojs.goto(f"/s/{share.token}")

    with page_nojs.expect_download() as download:
        page_nojs.get_by_role("link", name="Download all").click()
    saved = tmp_path / "all.zip"
    download.value.save_as(saved)

    with zipfile.ZipFile(saved) as archive:
        assert archive.testzip() is None
        assert archive.namelist() == [name for name, _, _ in NAMES_AND_TYPES]
        for name, data, _ in NAMES_AND_TYPES:
            assert hashlib.sha256(archive.read(name)).hexdigest() == hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("position", [3, 4], ids=["html", "svg"])
def test_a_preview_opened_on_its_own_never_runs_the_files_script(anon_context, share, position):
    page = anon_context().new_page()
    requested = []
    page.on("request", lambda request: requested.append(request.url))
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))

    response = page.goto(f"/s/{share.token}/files/{position}/preview")

    assert response.status == 200
    assert response.headers["content-security-policy"] == "sandbox"
    if position == 3:  # HTML is shown as its source, never rendered
        assert response.headers["content-type"] == "text/plain; charset=utf-8"
        expect(page.locator("body")).to_contain_text("<script>fetch('/pwned-html-script')")
    # Inline script, onload and onerror would all have asked by now.
    page.wait_for_load_state("networkidle")
    assert pwned(requested) == []
    assert dialogs == []
    assert page.title() != "pwned"


@pytest.mark.parametrize("javascript", [True, False], ids=["js", "nojs"])
def test_the_owner_ticks_files_on_the_dashboard_and_shares_them_with_one_link(anon_context, alice, share, javascript):
    owner = anon_context(viewport=DESKTOP, java_script_enabled=javascript).new_page()
    sign_in(owner, "alice", PASSWORD)
    show_files(owner)

    owner.get_by_label("Choose drawing.svg").check()
    owner.get_by_label("Choose Holiday photo.png").check()
    owner.get_by_role("button", name="Share the chosen files with one link").click()

    expect(owner.get_by_role("heading", name="Share 2 files")).to_be_visible()
    expect(owner.locator(".chosen-files li")).to_have_count(2)
    axe_check(owner)
    owner.get_by_label("1 day").check()
    owner.get_by_role("button", name="Create link").click()
    expect(owner.get_by_role("heading", name="Link to drawing.svg and 1 more file")).to_be_visible()
    made = Share.objects.exclude(pk=share.pk).get()
    # The dashboard lists newest first, whichever box was ticked first.
    assert [stored.name for stored in made.files] == ["drawing.svg", "Holiday photo.png"]
    no_foreign_requests(owner)


@pytest.mark.parametrize("javascript", [True, False], ids=["js", "nojs"])
def test_a_whole_folder_is_uploaded_then_shared_with_one_link(anon_context, alice, tmp_path, javascript):
    folder = tmp_path / "trip"
    (folder / "day 2").mkdir(parents=True)
    contents = {"map.txt": b"north\n", "day 2/photo.png": PNG, "day 2/notes.txt": b"rain\n" * 50}
    for relative, data in contents.items():
        (folder / relative).write_bytes(data)
    owner = anon_context(viewport=DESKTOP, java_script_enabled=javascript).new_page()
    sign_in(owner, "alice", PASSWORD)

    if javascript:
        owner.locator("#id_folder").set_input_files(folder)
    else:  # one plain file input without JavaScript: the folder's files, chosen together
        owner.locator("#id_files").set_input_files([folder / relative for relative in contents])
        owner.get_by_role("button", name="Upload").click()
    rows = owner.locator("#files tbody tr")
    expect(rows).to_have_count(3, timeout=20_000)
    stored = {stored.name: stored for stored in StoredFile.objects.filter(owner=alice)}
    assert {name: stored[name].size for name in stored} == {
        relative.rsplit("/", 1)[-1]: len(data) for relative, data in contents.items()
    }
    for name in stored:
        owner.get_by_label(f"Choose {name}").check()
    owner.get_by_role("button", name="Share the chosen files with one link").click()
    owner.get_by_label("1 day").check()
    owner.get_by_role("button", name="Create link").click()
    expect(owner.get_by_text("Your link is ready.")).to_be_visible()
    assert sorted(stored.name for stored in Share.objects.get().files) == sorted(stored)
    no_foreign_requests(owner)


def test_a_pdf_opens_in_chromiums_own_viewer_from_its_view_link(anon_context, alice, make_file):
    pdf = (
        b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n"
        b"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 200]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
    )
    files = [make_file(alice, "plan.pdf", pdf, "application/pdf"), make_file(alice, "a.txt", b"a\n")]
    share = Share.create_for(files=files, expires_at=timezone.now() + timedelta(hours=1))
    page = anon_context().new_page()
    page.goto(f"/s/{share.token}")
    downloads = []

    def note_download(download) -> None:  # a def: Playwright cannot call a builtin such as list.append
        downloads.append(download)

    def watch(opened) -> None:
        opened.on("download", note_download)

    page.context.on("page", watch)

    with page.context.expect_page() as opened:
        page.get_by_role("link", name="View in the browser plan.pdf").click()
    viewer = opened.value
    viewer.wait_for_load_state()

    assert viewer.url.endswith(f"/s/{share.token}/files/1/preview")
    assert viewer.evaluate("document.contentType") == "application/pdf"  # shown, not saved
    assert downloads == []
