"""The "Share encrypted files" page's JavaScript heap while it encrypts and
sends a 300 MB file (Chromium's own figure, through the DevTools protocol):
the encrypting source seals one chunk's records at a time, so what the page
holds does not grow with the file."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from microcloud_cli.ece import encrypted_size
from playwright.sync_api import Page

from sharing.models import StoredFile
from tests.browser.test_share_encrypted import DESKTOP, fill_in
from tests.browser.test_web_browser import PASSWORD, sign_in

MiB = 1024 * 1024
SIZE = 300 * MiB
# The heap and the ArrayBuffers' backing stores together. Measured here:
# 3.7 MiB before any file, a peak of 132 MiB whether the file is 100 or 300
# MiB (each 8 MiB chunk is read, padded, sealed and copied: V8 collects those
# buffers when their total nears its own threshold, not sooner). A source that
# held the file would pass 300 MiB.
BOUND = 200 * MiB


@pytest.fixture
def owner(anon_context, alice) -> Page:
    page = anon_context(viewport=DESKTOP).new_page()
    sign_in(page, "alice", PASSWORD)
    return page


def test_a_300_mb_file_is_encrypted_and_sent_in_a_bounded_heap(owner, tmp_path, settings):
    settings.MAX_UPLOAD_BYTES = 400 * MiB
    big = tmp_path / "big.bin"
    with big.open("wb") as out:
        for _ in range(SIZE // MiB):
            out.write(os.urandom(MiB))
    owner.goto("/files/encrypted/")
    cdp = owner.context.new_cdp_session(owner)

    def heap():
        usage = cdp.send("Runtime.getHeapUsage")
        return usage["usedSize"] + usage["backingStorageSize"]

    before = heap()
    started = time.monotonic()
    fill_in(owner, [big])
    peak = before
    result = owner.get_by_role("heading", name="Your encrypted link")
    while not result.is_visible():
        peak = max(peak, heap())
        owner.wait_for_timeout(100)  # a sample's pace, not a wait for something to happen
    elapsed = time.monotonic() - started
    print(f"heap before {before / MiB:.1f} MiB, peak {peak / MiB:.1f} MiB, {elapsed:.0f} s for {SIZE // MiB} MiB")
    assert peak < BOUND
    (stored,) = StoredFile.objects.all()
    assert Path(stored.content.path).stat().st_size == encrypted_size(SIZE)
