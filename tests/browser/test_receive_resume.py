"""An encrypted download cut at 40 % in Chromium: the link page's service
worker asks again from the first record it lacks, so the file on disk is
whole and byte-identical, and the server sent the file about once (the
part of a record that was cut, at most, twice), within a one-download
link's byte budget. Nothing the browser sent the server holds the key.

The cut is tests/browser/test_resume_browser.py's CuttingProxy: it stops
forwarding the first response for the file's ciphertext after 40 % of its
body, resets its connection to the server (which gives back what it never
sent), then closes the browser's connection, its body short."""

from __future__ import annotations

import hashlib
import random
import re

from playwright.sync_api import expect

from sharing.models import ShareEvent
from tests.browser.encrypted_links import Original, make_encrypted_link
from tests.browser.test_resume_browser import file_size, through_proxy, wait_until  # noqa: F401 (a fixture)

HEADER, RECORD = 21, 65536
# What Chromium may hold of a body that the worker has not read yet when the
# connection breaks (the fetch body's pipe): lost with the error, asked again.
IN_BROWSER = 4 * RECORD


def test_a_download_cut_at_40_percent_resumes_from_the_records_it_has(through_proxy, alice, alice_client, tmp_path):  # noqa: F811
    plain = tmp_path / "survey.bin"
    plain.write_bytes(random.Random(20261207).randbytes(file_size()))
    original = Original("Survey — raw data.bin", "application/octet-stream", plain)
    link = make_encrypted_link(alice_client, alice, [original], tmp_path, max_downloads=1)
    size = link.share.files[0].size  # the ciphertext's
    files_path = f"/s/{link.token}/files/1"
    cut_after = size * 2 // 5
    proxy, context = through_proxy(files_path, cut_after)
    page = context.new_page()
    page.goto(link.url)
    expect(page.locator(".file-list .file-name")).to_have_text(original.name)

    with page.expect_download() as started:
        page.get_by_role("button", name=f"Download {original.name}").click()
    download = started.value
    assert proxy.stalled.wait(30), "the download never reached the cut"
    proxy.cut_server_side()
    # The server closed the cut response and gave back what it never sent,
    # before the worker asks again (a resume while that response still held
    # its bytes would be told to wait).
    wait_until(lambda: link.share.events.filter(kind=ShareEvent.Kind.DELIVERED).exists(), timeout=30)
    proxy.cut_browser_side()

    saved = tmp_path / "saved.bin"
    download.save_as(saved)
    assert download.failure() is None
    assert hashlib.sha256(saved.read_bytes()).digest() == hashlib.sha256(plain.read_bytes()).digest()
    expect(page.locator(".file-status")).to_have_text("Downloaded.")

    # The first response was a whole-file 200 cut at 40 %; the worker asked
    # for the rest from the first record it did not have whole.
    assert proxy.victim_head[0] == "HTTP/1.1 200 OK"
    assert proxy.body_forwarded == cut_after
    first, resume = proxy.requests_for(files_path)
    assert "Range" not in first
    range_ = re.fullmatch(r"bytes=([0-9]+)-", resume["Range"])
    assert range_, resume["Range"]
    resumed_from = int(range_[1])
    assert (resumed_from - HEADER) % RECORD == 0, "not at a record's start"
    # At or just before the cut: what the browser had received but the
    # worker not yet read when the connection broke (a few records at
    # most) is all that is fetched twice.
    assert cut_after - IN_BROWSER <= resumed_from <= cut_after
    served = cut_after + (size - resumed_from)
    assert served <= size + IN_BROWSER, f"served {served / size:.3f} times the file"

    link.share.refresh_from_db()
    events = [(event.kind, event.bytes) for event in link.share.events.exclude(kind="delivered")]
    assert ("downloaded", size) in events
    assert ("resumed", size - resumed_from) in events
    assert link.share.total_downloads == 1

    # Nothing the browser sent the server holds the key: no URL, no header.
    heads = "\n".join("\n".join(lines) for lines in proxy.requests)
    assert f"/s/{link.token}/sealed" in heads
    assert link.secret not in heads
