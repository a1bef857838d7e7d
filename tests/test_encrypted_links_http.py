"""An encrypted link's rules over real HTTP, served by gunicorn (several
worker processes; on PostgreSQL two servers, as two nodes) on the test's
database. The server cannot read the files: it keeps the rules on their
ciphertext as on any bytes.

- 50 clients released at once at a one-download link: one gets the whole
  ciphertext (which decrypts), the others the link's refusal, and the
  history records one download.
- Made through the API with a 2 s lifetime and polled until past it, with
  no expiry daemon running: its file and its sealed metadata are refused
  from the deadline on, by the request's own clock.
- curl killed in the middle of the ciphertext and resumed with -C -: the
  file decrypts to the original, and the server sent the rest only.
"""

import random
import signal
from collections import Counter

import pytest
from django.urls import reverse
from django.utils import timezone
from microcloud_cli.sealing import open_metadata

from sharing.models import Share, ShareEvent
from tests.helpers import in_threads, report
from tests.test_delivery_receipts_http import receipts
from tests.test_encrypted_links import encrypted_share, opened
from tests.test_multi_file_http import refused_from_the_deadline, warm_up
from tests.test_resume_tools import (  # data and servers: fixtures
    MiB,
    data,  # noqa: F401
    fetch,
    interrupt,
    path_of,
    run,
    servers,  # noqa: F401
    settled,
    story,
    tool,
    url_of,
)

pytestmark = [pytest.mark.fault, pytest.mark.django_db(transaction=True)]

# The link's refusals of a whole copy: once it has ended by its limit, and
# before that while the winner's copy is still reserved.
REFUSALS = (
    b"This link has been downloaded as many times as its sender allowed.",
    b"What is left of this link's download limit does not cover what you asked for.",
)


def test_fifty_clients_racing_for_a_one_download_encrypted_link_get_one_copy(
    servers,  # noqa: F811
    alice,
    alice_client,
    make_file,
    capsys,
):
    plaintext = random.Random(50).randbytes(3 * MiB + 4321)
    share, secret, body = encrypted_share(alice_client, make_file, alice, plaintext, max_downloads=1)
    path = path_of(share)

    results = in_threads(lambda n: fetch(servers[n % len(servers)], path), 50, numbered=True)

    statuses = Counter(status for status, _, _ in results)
    report(capsys, "50 clients at once at a one-download encrypted link", statuses=dict(statuses))
    assert statuses == {200: 1, 410: 49}, statuses
    (whole,) = [got for status, _, got in results if status == 200]
    assert whole == body
    assert opened(secret, whole) == plaintext
    for status, _, refusal in results:
        assert status == 200 or refusal.startswith(REFUSALS), refusal[:200]
    share = settled(share)
    assert share.budget - share.bytes_left == len(body)
    assert share.total_downloads == 1
    assert (share.status, share.end_reason) == (Share.Status.EXPIRED, Share.EndReason.DOWNLOAD_LIMIT)
    assert share.events.filter(kind=ShareEvent.Kind.DOWNLOADED).count() == 1, story(share)
    assert not share.events.filter(kind=ShareEvent.Kind.RESUMED).exists(), story(share)


def test_an_encrypted_link_is_refused_from_its_deadline_without_a_daemon(
    servers,  # noqa: F811
    alice,
    alice_client,
    make_file,
    capsys,
):
    plaintext = b"The minutes of the board, item 1: confidential.\n" * 100

    def paths(share: Share) -> list[str]:
        token = share.token
        return [reverse(name, args=[token]) for name in ("public-share", "public-download", "public-sealed")]

    warm_up(servers, paths(encrypted_share(alice_client, make_file, alice, plaintext)[0]))
    share, _, _ = encrypted_share(alice_client, make_file, alice, plaintext, expires_in=2)

    lag_ms = refused_from_the_deadline(servers, paths(share), share.expires_at)

    report(capsys, "an encrypted link polled across its deadline, no daemon", first_refusal_after_ms=round(lag_ms, 1))
    share.refresh_from_db()
    assert share.status == Share.Status.ACTIVE  # nobody recorded it ended: each request's clock refused it
    assert not Share.objects.filter(pk=share.pk).servable(timezone.now()).exists()


def test_curl_resumes_an_encrypted_files_ciphertext_and_it_decrypts(
    servers,  # noqa: F811
    data,  # noqa: F811
    alice,
    alice_client,
    make_file,
    tmp_path,
    capsys,
):
    curl = tool("curl")
    share, secret, body = encrypted_share(alice_client, make_file, alice, data, max_downloads=1)
    out = tmp_path / "encrypted-1"
    # As the recipient's client does, first: once the cut copy has ended the
    # link by its limit, the metadata is refused like a whole copy.
    status, _, blob = fetch(servers[0], reverse("public-sealed", args=[share.token]))
    assert status == 200
    assert open_metadata(secret, blob)["files"][0]["size"] == len(data)

    interrupt(
        [curl, "-sS", "--limit-rate", "10M", "-o", str(out), url_of(servers[0], share)],
        out,
        signal.SIGKILL,
        size=len(body),
    )
    kept = out.stat().st_size
    assert 0 < kept < len(body)

    resumed = run([curl, "-sS", "-f", "-C", "-", "-o", str(out), url_of(servers[-1], share)])
    assert resumed.returncode == 0, (resumed.stderr, story(share))
    got = out.read_bytes()
    assert got == body
    assert opened(secret, got) == data

    share = settled(share)
    # The resume asked for, and was sent, the bytes curl lacked and no more.
    (resume,) = share.events.filter(kind=ShareEvent.Kind.RESUMED)
    assert resume.bytes == len(body) - kept, story(share)
    cut, completed = receipts(share)
    assert (completed.details["from"], completed.details["until"]) == (kept, len(body))
    assert completed.details["whole"] is True
    assert kept <= cut.details["until"] < len(body)
    assert share.total_downloads == 1
    report(capsys, "curl killed in an encrypted file, then curl -C -", body=len(body), kept=kept, resent=resume.bytes)
