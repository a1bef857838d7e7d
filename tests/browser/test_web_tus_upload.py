"""The dashboard's resumable uploads in a real browser: the vendored
tus-js-client sends each file in chunks to /api/uploads/ (the session and its
CSRF token authenticate), shows each file's figures, and goes on from the
server's offset after a reload, a dropped request or a pause.

The chunk is made small (TUS_WEB_CHUNK_BYTES) so a file of a few MiB takes
many requests. PatchGate holds the page's PATCH requests until the test lets
them through: on loopback a file would otherwise be gone before anything
could be seen or done mid-way. The live server runs in this process, so the
test reads the Upload rows and MEDIA_ROOT it writes.
"""

from __future__ import annotations

import contextlib
import hashlib
import random
import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page, Route, expect

from sharing.models import SharingPolicy, StoredFile
from tests.browser.helpers import axe_check, no_foreign_requests, save_screenshot
from tests.browser.test_web_browser import PASSWORD, sign_in
from uploads.models import Upload, partial_dir

KiB = 1024
MiB = 1024 * KiB
CHUNK = 256 * KiB
# Slower than the speed's measuring window (upload.js: 500 ms), so the page
# has a speed and a time left to show between two released chunks.
STEP_MS = 600
# Every page of the context reports what its Content-Security-Policy blocked.
RECORD_CSP_VIOLATIONS = """document.addEventListener("securitypolicyviolation", (event) => {
    (window.cspViolations = window.cspViolations || []).push(event.violatedDirective + " " + event.blockedURI);
});"""


def is_upload_url(url: str) -> bool:
    return "/api/uploads/" in url


class PatchGate:
    """Hold the page's tus PATCH requests until the test releases them; let
    everything else (creation, HEAD, DELETE) through at once."""

    def __init__(self, page: Page):
        self.page = page
        self.held: list[Route] = []
        page.route(is_upload_url, self._arrive)

    def _arrive(self, route: Route) -> None:
        if route.request.method == "PATCH":
            self.held.append(route)
        else:
            route.continue_()

    def wait_for_held(self, count: int = 1, timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        while len(self.held) < count:
            assert time.monotonic() < deadline, f"{len(self.held)} PATCH requests held, not {count}"
            self.page.wait_for_timeout(20)  # lets Playwright deliver the routed requests

    def release(self, count: int = 1) -> None:
        """Let `count` PATCH requests through, one after the other."""
        for _ in range(count):
            self.wait_for_held()
            self.held.pop(0).continue_()

    def release_held(self) -> None:
        """Let through every request held now (one per file being sent)."""
        self.wait_for_held()
        while self.held:
            self.held.pop(0).continue_()

    def drop(self) -> None:
        """Stop holding; what is held never reaches the server (the page gave it up)."""
        for route in self.held:
            with contextlib.suppress(PlaywrightError):  # already gone with the page's abort
                route.abort()
        self.held.clear()
        self.page.unroute(is_upload_url, self._arrive)

    def open(self) -> None:
        """Stop holding; what is held goes on, unless the page gave it up meanwhile."""
        for route in self.held:
            with contextlib.suppress(PlaywrightError):  # aborted by the page (a pause, a cancel)
                route.continue_()
        self.held.clear()
        self.page.unroute(is_upload_url, self._arrive)


@pytest.fixture
def small_chunks(settings):
    settings.TUS_WEB_CHUNK_BYTES = CHUNK
    return CHUNK


@pytest.fixture
def owner(anon_context, alice, small_chunks) -> Page:
    """Alice's browser on the dashboard, uploading in 256 KiB chunks."""
    context = anon_context()
    context.add_init_script(RECORD_CSP_VIOLATIONS)
    page = context.new_page()
    sign_in(page, "alice", PASSWORD)
    return page


def source(folder: Path, name: str, size: int, seed: int) -> Path:
    """A file of random bytes on disk (the browser reads it as a person's file)."""
    path = folder / name
    path.write_bytes(random.Random(seed).randbytes(size))
    return path


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def stored_sha256(stored: StoredFile) -> str:
    with stored.content.open("rb") as handle:
        return sha256(handle.read())


def item_of(page: Page, name: str):
    return page.locator("#upload-progress li").filter(has=page.locator(".upload-name", has_text=name))


def server_offset(page: Page, owner, expected: int, timeout: float = 10) -> Upload:
    """Wait until the owner's one upload is at `expected` bytes; return it."""
    deadline = time.monotonic() + timeout
    while True:
        upload = Upload.objects.filter(owner=owner).first()
        if upload is not None and upload.offset == expected:
            return upload
        assert time.monotonic() < deadline, f"the upload is at {upload and upload.offset}, not {expected}"
        page.wait_for_timeout(20)


def record_patches(page: Page) -> list[int]:
    """The Upload-Offset of every tus PATCH the page sends from now on."""
    patches: list[int] = []

    def note(request):
        if request.method == "PATCH" and is_upload_url(request.url):
            patches.append(int(request.headers["upload-offset"]))

    page.on("request", note)
    return patches


def no_csp_violations(page: Page) -> None:
    assert page.evaluate("window.cspViolations || []") == []


def test_two_files_go_at_once_with_their_figures_and_arrive_intact(owner, alice, tmp_path):
    photos = source(tmp_path, "camera roll.zip", 3 * MiB + 123, seed=1)
    notes = source(tmp_path, "notes.pdf", 2 * MiB + 7, seed=2)
    gate = PatchGate(owner)
    owner.locator("#id_files").set_input_files([photos, notes])
    items = owner.locator("#upload-progress li")
    expect(items).to_have_count(2)
    for _ in range(4):  # a few chunks of each, at a pace the page can measure
        gate.wait_for_held(2)
        gate.release_held()
        owner.wait_for_timeout(STEP_MS)
    # Sizes as the file list prints them (pages.units): KB, and a space that does not wrap.
    for name, size in (("camera roll.zip", "3.0\xa0MB"), ("notes.pdf", "2.0\xa0MB")):
        item = item_of(owner, name)
        expect(item.locator('[data-stat="percent"]')).to_have_text(re.compile(r"^\d{1,2}%$"))
        expect(item.locator('[data-stat="bytes"]')).to_have_text(re.compile(rf"^\d+\.\d\xa0(KB|MB) of {size}$"))
        expect(item.locator('[data-stat="speed"]')).to_have_text(re.compile(r"^\d+\.\d\xa0(KB|MB)/s$"))
        expect(item.locator('[data-stat="eta"]')).to_have_text(re.compile(r"^\d+ (sec|min) left$"))
        expect(item.get_by_role("button", name=f"Pause {name}")).to_be_visible()
        expect(item.get_by_role("button", name=f"Cancel {name}")).to_be_visible()
    assert 0 < int(items.nth(0).locator("progress").get_attribute("value")) < 100
    axe_check(owner)
    save_screenshot(owner, "web-upload-progress")

    gate.open()
    expect(item_of(owner, "camera roll.zip")).to_contain_text("Uploaded", timeout=20_000)
    expect(item_of(owner, "notes.pdf")).to_contain_text("Uploaded", timeout=20_000)
    expect(items.get_by_role("button")).to_have_count(0)
    expect(owner.locator("#files tbody tr")).to_have_count(2)  # listed without a reload
    stored = {file.name: file for file in StoredFile.objects.filter(owner=alice)}
    assert set(stored) == {"camera roll.zip", "notes.pdf"}
    assert stored_sha256(stored["camera roll.zip"]) == sha256(photos.read_bytes())
    assert stored_sha256(stored["notes.pdf"]) == sha256(notes.read_bytes())
    assert stored["notes.pdf"].content_type == "application/pdf"  # the filetype metadata
    assert [upload.finished for upload in Upload.objects.all()] == [True, True]
    assert owner.evaluate("Object.keys(localStorage).filter((key) => key.startsWith('tus::'))") == []
    axe_check(owner)
    no_csp_violations(owner)
    no_foreign_requests(owner)


def test_files_dropped_on_the_zone_are_uploaded(owner, alice):
    # Two files made in the page from a pattern the test can make too.
    owner.evaluate(
        """() => {
            const made = (name, size) => {
                const bytes = new Uint8Array(size);
                for (let i = 0; i < size; i++) bytes[i] = (i * 31) % 251;
                return new File([bytes], name, { type: "application/octet-stream" });
            };
            const transfer = new DataTransfer();
            transfer.items.add(made("first.bin", 700000));
            transfer.items.add(made("second.bin", 300000));
            const zone = document.getElementById("drop-zone");
            zone.dispatchEvent(new DragEvent("dragover", { dataTransfer: transfer, bubbles: true, cancelable: true }));
            zone.dispatchEvent(new DragEvent("drop", { dataTransfer: transfer, bubbles: true, cancelable: true }));
        }"""
    )
    expect(item_of(owner, "first.bin")).to_contain_text("Uploaded")
    expect(item_of(owner, "second.bin")).to_contain_text("Uploaded")
    expect(owner.locator("#files tbody tr")).to_have_count(2)
    for stored in StoredFile.objects.filter(owner=alice):
        assert stored_sha256(stored) == sha256(bytes((i * 31) % 251 for i in range(stored.size)))


def test_a_reload_mid_upload_resumes_from_the_servers_offset(owner, alice, tmp_path):
    backup = source(tmp_path, "backup.tar", 4 * MiB + 5, seed=3)
    gate = PatchGate(owner)
    owner.locator("#id_files").set_input_files(backup)
    gate.release(4)
    upload = server_offset(owner, alice, 4 * CHUNK)
    gate.wait_for_held()  # the fifth chunk is on its way when the page goes
    owner.reload()
    owner.unroute_all(behavior="ignoreErrors")
    expect(owner.locator("#upload-progress li")).to_have_count(0)
    assert Upload.objects.get().offset == 4 * CHUNK

    patches = record_patches(owner)
    posts: list[str] = []
    owner.on("request", lambda request: posts.append(request.url) if request.method == "POST" else None)
    owner.locator("#id_files").set_input_files(backup)  # the same file, chosen again
    item = item_of(owner, "backup.tar")
    expect(item).to_contain_text("Uploaded", timeout=20_000)
    assert posts == []  # no new upload: the old one went on
    # Only the rest went, chunk after chunk from where the server stood.
    assert patches == list(range(4 * CHUNK, backup.stat().st_size, CHUNK))
    upload.refresh_from_db()
    assert upload.finished
    assert upload.offset == upload.length == backup.stat().st_size
    assert Upload.objects.count() == 1
    assert stored_sha256(StoredFile.objects.get(owner=alice)) == sha256(backup.read_bytes())
    no_foreign_requests(owner)


def test_dropped_requests_are_retried_and_the_file_arrives_intact(owner, alice, tmp_path):
    video = source(tmp_path, "video.mp4", 2 * MiB + 1, seed=4)
    seen: list[int] = []
    dropped: list[int] = []

    def flaky(route: Route) -> None:
        # The third and fourth PATCH never reach the server, as on a dropped connection.
        if route.request.method == "PATCH":
            seen.append(int(route.request.headers["upload-offset"]))
            if len(seen) in (3, 4):
                dropped.append(seen[-1])
                route.abort("connectionreset")
                return
        route.continue_()

    owner.route(is_upload_url, flaky)
    owner.locator("#id_files").set_input_files(video)
    item = item_of(owner, "video.mp4")
    expect(item).to_contain_text("Connection lost; trying again")
    expect(item).to_contain_text("Uploaded", timeout=20_000)
    assert dropped == [2 * CHUNK, 2 * CHUNK]
    assert seen.count(2 * CHUNK) == 3  # twice dropped, then sent
    assert stored_sha256(StoredFile.objects.get(owner=alice)) == sha256(video.read_bytes())


def test_pause_then_resume(owner, alice, tmp_path):
    archive = source(tmp_path, "archive.7z", 2 * MiB + 99, seed=5)
    gate = PatchGate(owner)
    owner.locator("#id_files").set_input_files(archive)
    gate.release(2)
    server_offset(owner, alice, 2 * CHUNK)
    gate.wait_for_held()
    item = item_of(owner, "archive.7z")
    patches = record_patches(owner)
    item.get_by_role("button", name="Pause archive.7z").click()
    expect(item).to_contain_text("Paused")
    gate.drop()  # the chunk in flight was given up by the pause
    owner.wait_for_timeout(STEP_MS)
    assert patches == []  # nothing more is sent while paused
    assert Upload.objects.get().offset == 2 * CHUNK
    axe_check(owner)
    item.get_by_role("button", name="Resume archive.7z").click()
    expect(item).to_contain_text("Uploaded", timeout=20_000)
    assert patches[0] == 2 * CHUNK  # from where the server stood
    assert stored_sha256(StoredFile.objects.get(owner=alice)) == sha256(archive.read_bytes())


def test_cancel_removes_the_upload_from_the_server(owner, alice, tmp_path):
    draft = source(tmp_path, "draft.mov", 2 * MiB, seed=6)
    gate = PatchGate(owner)
    owner.locator("#id_files").set_input_files(draft)
    gate.release(2)
    server_offset(owner, alice, 2 * CHUNK)
    assert [path.name for path in partial_dir().iterdir()] == [Upload.objects.get().pk]
    gate.wait_for_held()
    deletes: list[str] = []
    owner.on("request", lambda request: deletes.append(request.url) if request.method == "DELETE" else None)
    item = item_of(owner, "draft.mov")
    item.get_by_role("button", name="Cancel draft.mov").click()
    expect(item).to_contain_text("Cancelled")
    expect(item.get_by_role("button")).to_have_count(0)
    gate.drop()
    assert len(deletes) == 1
    assert not Upload.objects.exists()
    assert list(partial_dir().iterdir()) == []
    assert not StoredFile.objects.exists()
    assert owner.evaluate("Object.keys(localStorage).filter((key) => key.startsWith('tus::'))") == []


def test_a_file_over_the_quota_shows_the_servers_message(owner, alice, tmp_path):
    SharingPolicy.objects.update_or_create(pk=SharingPolicy.SINGLETON_ID, defaults={"default_quota_bytes": MiB})
    large = source(tmp_path, "large.iso", 2 * MiB, seed=7)
    owner.locator("#id_files").set_input_files(large)
    item = item_of(owner, "large.iso")
    expect(item).to_contain_text(re.compile(r"Upload failed: Not enough storage"))
    expect(item.get_by_role("button")).to_have_count(0)
    assert not Upload.objects.exists()
    assert not StoredFile.objects.exists()
    axe_check(owner)


UPLOAD_SCRIPT = re.compile(r"/web/upload(\.[0-9a-f]+)?\.js$")


def test_files_chosen_before_the_script_ran_are_sent_when_it_runs(owner, alice):
    """On a slow page the file input is there before upload.js: a choice made
    then fired no listener, and the file sat in the input (seen in CI)."""
    held: list[Route] = []

    def hold(route: Route) -> None:
        held.append(route)  # upload.js waits until the file is chosen

    owner.route(UPLOAD_SCRIPT, hold)
    with owner.expect_request(UPLOAD_SCRIPT):
        owner.goto("/", wait_until="commit")
    owner.locator("#id_files").set_input_files(
        [{"name": "early.txt", "mimeType": "text/plain", "buffer": b"chosen before the script ran"}]
    )
    assert len(held) == 1
    held[0].continue_()
    expect(item_of(owner, "early.txt")).to_contain_text("Uploaded")
    assert stored_sha256(StoredFile.objects.get(owner=alice)) == sha256(b"chosen before the script ran")
