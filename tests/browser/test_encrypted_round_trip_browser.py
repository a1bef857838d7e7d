"""An encrypted link from one browser to another, as people use it: alice
shares two files (one of 300 MB) encrypted on "Share encrypted files", and a
stranger's browser opens the link, sees the names and downloads both,
byte-identical, the big one with the page's and its worker's JavaScript
heaps far below its size. Neither browser sends the link's secret (or, for
a password-wrapped link, the password), and the server keeps no name and no
run of the plaintext."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from microcloud_cli.ece import encrypted_size
from playwright.sync_api import BrowserContext, Request, expect

from sharing.models import Share
from tests.browser.test_receive_encrypted import download, open_link
from tests.browser.test_receive_memory import WorkerHeap, heap_of
from tests.browser.test_share_encrypted import (
    DESKTOP,
    PlainRuns,
    fill_in,
    headers_of,
    record_everything,
    share_encrypted,
    stored_bytes,
)
from tests.cli.test_client_encrypted import assert_the_database_never_holds

MB = 1000 * 1000
BIG = 300 * MB
CHUNK = 8 * 1024 * 1024
# Well below the file: the worker holds a few 64 KiB records at a time.
HEAP_CEILING = 100 * MB
SMALL_NAME = "quarterly-figures-draft.txt"
BIG_NAME = "site-backup-2026-12.tar"


def big_file(path: Path) -> str:
    """300 MB of random bytes at `path`; return their SHA-256."""
    digest = hashlib.sha256()
    with path.open("wb") as out:
        for start in range(0, BIG, CHUNK):
            block = os.urandom(min(CHUNK, BIG - start))
            digest.update(block)
            out.write(block)
    return digest.hexdigest()


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while block := source.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def said(requests: list[Request], *texts: str) -> list[str]:
    """The requests whose URL, headers (tus metadata decoded) or body hold one of `texts`."""
    found = []
    for request in requests:
        sent = request.url.encode() + headers_of(request) + (request.post_data_buffer or b"")
        found += [f"{request.method} {request.url}" for text in texts if text.encode() in sent]
    return found


def recipient(anon_context) -> tuple[BrowserContext, list[Request]]:
    context = anon_context(viewport=DESKTOP)
    seen: list[Request] = []
    context.on("request", lambda request: seen.append(request))
    return context, seen


def test_two_files_shared_encrypted_in_one_browser_download_in_another(
    browser, owner_context, anon_context, live_server, tmp_path
):
    small = tmp_path / SMALL_NAME
    small.write_bytes(b"Revenue, costs and what is left, by month.\n" * 3000)
    big = tmp_path / BIG_NAME
    big_digest = big_file(big)
    sent_by_owner = record_everything(owner_context)

    link = share_encrypted(owner_context.new_page(), [small, big])
    base, secret = link.split("#")
    share = Share.objects.get(token=base.rsplit("/", 1)[-1])
    assert sorted(stored.size for stored in share.files) == sorted(
        [encrypted_size(small.stat().st_size), encrypted_size(BIG)]
    )
    big.unlink()  # its digest is kept; the disk need not hold it three times

    context, sent_by_recipient = recipient(anon_context)
    page = context.new_page()
    open_link(page, link)
    expect(page.locator(".file-list .file-name")).to_have_text([SMALL_NAME, BIG_NAME])
    assert download(page, SMALL_NAME, tmp_path / "small-saved") == small.read_bytes()

    page_heap = context.new_cdp_session(page)
    with page.expect_download() as started:
        page.get_by_role("button", name=f"Download {BIG_NAME}").click()
    worker = WorkerHeap(browser, f"{live_server.url}/s/{share.token}/receive.js")
    peaks = {"page": 0, "worker": 0}
    status = page.locator(".file-status").nth(1)
    while status.inner_text() != "Downloaded.":
        peaks["page"] = max(peaks["page"], heap_of(page_heap.send("Runtime.getHeapUsage")))
        peaks["worker"] = max(peaks["worker"], worker.used(page)[1])
        page.wait_for_timeout(200)
    saved = tmp_path / "big-saved"
    started.value.save_as(saved)
    assert started.value.suggested_filename == BIG_NAME
    assert sha256_of(saved) == big_digest
    saved.unlink()
    print(f"peak JS heaps (ArrayBuffers included) while downloading 300 MB: {peaks}")
    assert 0 < peaks["page"] < HEAP_CEILING, peaks
    assert 0 < peaks["worker"] < HEAP_CEILING, peaks

    # Nothing either browser sent holds the secret (so no server log can:
    # tests/cli read gunicorn's for the client's requests); the names stayed
    # in the browsers.
    assert said(sent_by_owner + sent_by_recipient, secret, SMALL_NAME, BIG_NAME) == []
    assert sent_by_recipient, "the recipient's requests were not recorded"
    assert_the_database_never_holds(SMALL_NAME, BIG_NAME, secret)
    small_stored = min(stored_bytes(share), key=len)
    assert not PlainRuns(small.read_bytes()).found_in(small_stored)


def test_a_password_link_made_in_the_browser_opens_with_its_password(owner_context, anon_context, tmp_path):
    note = tmp_path / "contract-v3.txt"
    note.write_bytes(b"The parties agree to the terms below.\n" * 500)
    owner = owner_context.new_page()
    sent_by_owner = record_everything(owner_context)
    fill_in(owner, [note], password="violet harbour lamp")
    expect(owner.get_by_role("heading", name="Your encrypted link")).to_be_visible(timeout=60_000)
    link = owner.locator("#encrypted-link").input_value()
    assert "#" not in link  # the password opens it: the link goes without its key

    context, sent_by_recipient = recipient(anon_context)
    page = context.new_page()
    page.goto(link)
    page.get_by_label("Password").fill("violet harbour lamp")
    with page.expect_navigation():
        page.get_by_role("button", name="Unlock").click()
    expect(page.locator(".file-list .file-name")).to_have_text(["contract-v3.txt"])
    secret = page.evaluate("() => location.hash.slice(1)")
    assert len(secret) == 22
    assert download(page, "contract-v3.txt", tmp_path / "saved") == note.read_bytes()
    assert said(sent_by_owner + sent_by_recipient, "violet harbour lamp", secret, "contract-v3.txt") == []
