"""A 300 MB encrypted file downloaded decrypted in Chromium with bounded
memory: the JavaScript heaps of the link's page and of its service worker
(Chrome DevTools Protocol, Runtime.getHeapUsage with the ArrayBuffers'
contents, after a garbage collection, sampled while the file streams to
disk) stay far below the file's size, whatever it is, because
the worker holds a few 64 KiB records at a time."""

from __future__ import annotations

import hashlib
import json
import os
import threading

from playwright.sync_api import Browser, expect

from tests.browser.encrypted_links import Original, make_encrypted_link

MB = 1000 * 1000
SIZE = 300 * MB
# Measured here: the page about 2.5 MB, the worker about 12 MB once
# collected (the scripts, a few records, and the chunk the network handed
# it last, which may hold several records); a worker that held the file, or
# a growing part of it, would pass this within seconds.
HEAP_CEILING = 32 * MB
CHUNK = 8 * 1024 * 1024


def heap_of(usage: dict) -> int:
    """The JS heap in use plus the ArrayBuffers' contents, which V8 keeps
    outside it (every record a worker holds is one)."""
    return int(usage["usedSize"]) + int(usage.get("backingStorageSize", 0))


class WorkerHeap:
    """Runtime.getHeapUsage of a service worker, through a browser-wide
    DevTools session (Playwright opens sessions on pages only)."""

    def __init__(self, browser: Browser, script_url: str):
        self.session = browser.new_browser_cdp_session()
        targets = self.session.send("Target.getTargets")["targetInfos"]
        target = next(t for t in targets if t["type"] == "service_worker" and t["url"] == script_url)
        self.answers: dict[int, dict] = {}
        self.arrived = threading.Condition()
        self.session.on("Target.receivedMessageFromTarget", self._received)
        self.target = self.session.send("Target.attachToTarget", {"targetId": target["targetId"], "flatten": False})[
            "sessionId"
        ]
        self.next_id = 0

    def _received(self, event: dict) -> None:
        message = json.loads(event["message"])
        if "id" in message:
            self.answers[message["id"]] = message.get("result", {})

    def ask(self, page, method: str) -> dict:
        self.next_id += 1
        asked = self.next_id
        message = json.dumps({"id": asked, "method": method})
        self.session.send("Target.sendMessageToTarget", {"sessionId": self.target, "message": message})
        # The answer comes as an event, delivered while Playwright waits on the page.
        while asked not in self.answers:
            page.wait_for_timeout(20)
        return self.answers.pop(asked)

    def used(self, page) -> tuple[int, int]:
        """(what the heap holds now, what it holds once garbage is collected)."""
        now = heap_of(self.ask(page, "Runtime.getHeapUsage"))
        self.ask(page, "HeapProfiler.collectGarbage")
        return now, heap_of(self.ask(page, "Runtime.getHeapUsage"))


def test_a_300_mb_download_keeps_the_page_and_worker_heaps_small(
    browser, anon_context, alice, alice_client, tmp_path, live_server
):
    plain = tmp_path / "archive.tar"
    digest = hashlib.sha256()
    with plain.open("wb") as out:
        for _ in range(SIZE // CHUNK):
            block = os.urandom(CHUNK)
            digest.update(block)
            out.write(block)
        rest = os.urandom(SIZE % CHUNK)
        digest.update(rest)
        out.write(rest)
    original = Original("archive.tar", "application/x-tar", plain)
    link = make_encrypted_link(alice_client, alice, [original], tmp_path)

    context = anon_context()
    page = context.new_page()
    page.goto(link.url)
    expect(page.locator(".file-list .file-name")).to_have_text("archive.tar")
    page_heap = context.new_cdp_session(page)

    with page.expect_download() as started:
        page.get_by_role("button", name="Download archive.tar").click()
    download = started.value
    worker = WorkerHeap(browser, f"{live_server.url}/s/{link.token}/receive.js")
    # Live: what the heap holds once collected (the bound this test asserts);
    # before collection it also holds records already sent and not yet collected.
    peaks = {"page": 0, "worker": 0, "worker before collection": 0}
    samples = 0
    status = page.locator(".file-status")
    while status.inner_text() != "Downloaded.":
        peaks["page"] = max(peaks["page"], heap_of(page_heap.send("Runtime.getHeapUsage")))
        before, live = worker.used(page)
        peaks["worker"] = max(peaks["worker"], live)
        peaks["worker before collection"] = max(peaks["worker before collection"], before)
        samples += 1
        page.wait_for_timeout(100)
    usage = page_heap.send("Runtime.getHeapUsage")
    assert "backingStorageSize" in usage, usage
    print(f"peak JS heap while downloading {SIZE / MB:.0f} MB: {peaks} bytes over {samples} samples")

    saved = tmp_path / "saved.tar"
    download.save_as(saved)
    plain.unlink()
    sha = hashlib.sha256()
    with saved.open("rb") as source:
        while block := source.read(CHUNK):
            sha.update(block)
    assert sha.digest() == digest.digest()
    assert samples, "the download ended before the heaps were sampled"
    assert peaks["page"] < HEAP_CEILING, peaks
    assert peaks["worker"] < HEAP_CEILING, peaks
