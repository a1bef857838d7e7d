"""The encrypting file source tus-js-client reads on the "Share encrypted
files" page (web/static/web/sealed_source.js), in Chromium: any range of
the ciphertext is the same bytes as that range of the whole body, so a PATCH
that fails and is sent again, from the offset the server answers, still
makes a file that decrypts (with http_ece, which we did not write)."""

from __future__ import annotations

import base64
import random

import http_ece
import pytest
from microcloud_cli.sealing import CONTENT_INFO, derive, secret_from_text
from playwright.sync_api import Page, Route, expect

from sharing.models import Share
from tests.browser.test_share_encrypted import DESKTOP, share_encrypted, stored_bytes
from tests.browser.test_web_browser import PASSWORD, sign_in

KiB = 1024
# Not a multiple of anything in the format: every chunk starts and ends
# inside a record, away from the header.
ODD_CHUNK = 200_003

# Seals `size` random bytes at position 3 of a link, reads the body whole
# and in ranges of random lengths and around each record's edges, and gives back the secret, the
# plaintext, the whole body and whether every range matched it.
SLICES = """async ([size, seed]) => {
  const ece = window.microcloudECE;
  let state = seed;
  const next = () => (state = (state * 1103515245 + 12345) % 2147483648);
  const plain = new Uint8Array(size).map(() => next() & 255);
  const secret = ece.newSecret();
  const cipher = await ece.fileCipher(secret, 3);
  const source = await window.microcloudSealedSource.reader(cipher).openFile(new Blob([plain]));
  const bytes = async (start, end) => new Uint8Array(await (await source.slice(start, end)).value.arrayBuffer());
  const whole = await bytes(0, source.size);
  const ranges = [];
  for (let start = 0; start < source.size; ) {
    const end = Math.min(source.size, start + 1 + (next() % 150000));
    const part = await bytes(start, end);
    ranges.push(part.length === end - start && part.every((byte, i) => byte === whole[start + i]));
    start = end;
  }
  // And a byte either side of the header's end and of every record's.
  for (let edge = ece.HEADER_BYTES; edge <= source.size; edge += ece.RECORD_BYTES) {
    for (const [start, end] of [[edge - 1, edge], [edge, edge + 1], [edge - 1, edge + 1]]) {
      const part = await bytes(start, Math.min(end, source.size));
      ranges.push(part.every((byte, i) => byte === whole[start + i]));
    }
  }
  const text = (data) => ece.base64url(data);
  return { secret: ece.secretText(secret), plain: text(plain), whole: text(whole), size: source.size, ranges };
}"""


def unbase64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@pytest.fixture
def owner(anon_context, alice) -> Page:
    page = anon_context(viewport=DESKTOP).new_page()
    sign_in(page, "alice", PASSWORD)
    return page


@pytest.mark.parametrize("size", [0, 65_518, 65_519, 300 * KiB + 7])
def test_any_range_of_the_ciphertext_is_that_range_of_the_whole_body(owner, size):
    owner.goto("/files/encrypted/")
    made = owner.evaluate(SLICES, [size, size + 1])
    assert made["size"] == len(unbase64(made["whole"]))
    assert made["ranges"]
    assert all(made["ranges"])
    key = derive(secret_from_text(made["secret"]), CONTENT_INFO)
    assert http_ece.decrypt(unbase64(made["whole"]), key=key, version="aes128gcm") == unbase64(made["plain"])


def test_a_patch_that_fails_is_sent_again_and_the_file_still_decrypts(owner, settings, tmp_path):
    settings.TUS_WEB_CHUNK_BYTES = ODD_CHUNK
    plain = tmp_path / "holiday.jpg"
    plain.write_bytes(random.Random(3).randbytes(5 * ODD_CHUNK + 12_345))
    offsets: list[int] = []

    def fail_the_third_once(route: Route) -> None:
        if route.request.method == "PATCH":
            offsets.append(int(route.request.headers["upload-offset"]))
            if len(offsets) == 3:
                route.abort("connectionreset")
                return
        route.continue_()

    owner.route("**/api/uploads/**", fail_the_third_once)
    link = share_encrypted(owner, [plain])

    failed = 2 * ODD_CHUNK
    assert offsets[:4] == [0, ODD_CHUNK, failed, failed]  # the same chunk, again, from the server's offset
    share = Share.objects.get(token=link.split("#")[0].rstrip("/").rsplit("/", 1)[-1])
    (stored,) = stored_bytes(share)
    key = derive(secret_from_text(link.split("#")[1]), CONTENT_INFO)
    assert http_ece.decrypt(stored, key=key, version="aes128gcm") == plain.read_bytes()
    expect(owner.locator("#upload-progress li")).to_contain_text("Uploaded")
