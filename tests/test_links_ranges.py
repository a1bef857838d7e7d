"""Range requests and resumes on the public link, and what they cost a limited link."""

import hashlib
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from links.ranges import ByteRange, Unsatisfiable, requested_range
from sharing.models import Share

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("either_storage"),
]  # responses are closed as a server would

DATA = bytes(range(256)) * 16  # 4096 bytes
ETAG = f'"{hashlib.sha256(DATA).hexdigest()}"'


# --- parsing -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("bytes=0-99", ByteRange(0, 100)),
        ("bytes=100-", ByteRange(100, 4096)),
        ("bytes=-10", ByteRange(4086, 4096)),
        ("bytes=-99999", ByteRange(0, 4096)),
        ("bytes=4000-99999", ByteRange(4000, 4096)),
        (" bytes=5-5 ", ByteRange(5, 6)),
        # Ignored (the whole file is sent): several ranges, other units, nonsense.
        ("bytes=0-1,5-6", None),
        ("items=0-1", None),
        ("bytes=5-1", None),
        ("bytes=-", None),
        ("bytes=a-b", None),
        ("bytes=" + "9" * 40 + "-", None),
        ("bytes=\x00-1", None),
        ("", None),
    ],
)
def test_ranges_are_read_strictly(header, expected):
    assert requested_range(header, 4096, if_range=None, etag=ETAG) == expected


@pytest.mark.parametrize("header", ["bytes=4096-", "bytes=5000-6000", "bytes=-0"])
def test_a_range_past_the_end_is_unsatisfiable(header):
    with pytest.raises(Unsatisfiable):
        requested_range(header, 4096, if_range=None, etag=ETAG)


def test_if_range_must_match_the_strong_etag():
    assert requested_range("bytes=10-", 4096, if_range=ETAG, etag=ETAG) == ByteRange(10, 4096)
    assert requested_range("bytes=10-", 4096, if_range='"other"', etag=ETAG) is None
    assert requested_range("bytes=10-", 4096, if_range="Sat, 01 Jan 2026 00:00:00 GMT", etag=ETAG) is None
    assert requested_range("bytes=10-", 4096, if_range=f"W/{ETAG}", etag=ETAG) is None


# --- over HTTP -------------------------------------------------------------------


@pytest.fixture
def big(alice, make_file):
    return make_file(alice, name="big.bin", data=DATA, content_type="application/octet-stream")


def share_of(stored, **options) -> Share:
    return Share.create_for(file=stored, expires_at=timezone.now() + timedelta(hours=1), **options)


def url(share: Share) -> str:
    return reverse("public-share", args=[share.token])


def body(response) -> bytes:
    return b"".join(response.streaming_content)


def count(share: Share) -> int:
    share.refresh_from_db()
    return share.total_downloads


def test_a_whole_download_advertises_ranges_and_a_strong_etag(big):
    share = share_of(big)
    response = Client().get(url(share))
    assert response.status_code == 200
    assert response["Accept-Ranges"] == "bytes"
    assert response["ETag"] == ETAG
    assert response["Content-Length"] == "4096"
    assert body(response) == DATA
    assert not response.cookies  # resuming needs no ticket


@pytest.mark.parametrize(("method", "counted"), [("get", 1), ("head", 0)])
def test_a_single_range_is_a_206_with_content_range(big, method, counted):
    share = share_of(big)
    response = getattr(Client(), method)(url(share), HTTP_RANGE="bytes=0-99")
    assert response.status_code == 206
    assert response["Content-Range"] == "bytes 0-99/4096"
    assert response["Content-Length"] == "100"
    if method == "get":
        assert body(response) == DATA[:100]
    assert count(share) == counted  # a GET of a range from byte 0 starts a download; HEAD counts nothing


def test_an_unsatisfiable_range_is_416_and_counts_nothing(big):
    share = share_of(big)
    response = Client().get(url(share), HTTP_RANGE="bytes=5000-")
    assert response.status_code == 416
    assert response["Content-Range"] == "bytes */4096"
    assert count(share) == 0


@pytest.mark.parametrize("header", ["bytes=0-1,3-4", "bytes=abc", "bytes=9-1", "bytes=" + "\u00e9" * 3, "x" * 5000])
def test_malformed_ranges_get_the_whole_file_never_a_500(big, header):
    share = share_of(big)
    response = Client().get(url(share), HTTP_RANGE=header)
    assert response.status_code == 200
    assert body(response) == DATA


def left(share: Share) -> int:
    share.refresh_from_db()
    return share.bytes_left


def test_a_broken_download_resumes_from_another_client_without_a_new_count(alice, make_file):
    data = bytes(range(256)) * 8192  # 2 MiB: several blocks of the response
    share = share_of(make_file(alice, name="big.bin", data=data), max_downloads=1)
    first = Client().get(url(share))
    received = next(iter(first.streaming_content))[:100_000]  # the connection breaks
    first.close()
    assert count(share) == 1

    rest = Client().get(url(share), HTTP_RANGE=f"bytes={len(received)}-", HTTP_IF_RANGE=f'"{share.file.sha256}"')
    assert rest.status_code == 206
    assert received + body(rest) == data
    assert count(share) == 1
    share.refresh_from_db()
    assert share.end_reason == Share.EndReason.DOWNLOAD_LIMIT  # the copy is complete: no whole one is left


def test_a_range_costs_its_bytes_not_a_download(big):
    share = share_of(big, max_downloads=2)  # a budget of 2 x 4096 + 1024 bytes
    assert left(share) == 9216
    for expected_left in (5121, 1026):
        response = Client().get(url(share), HTTP_RANGE="bytes=1-")
        assert (response.status_code, body(response)) == (206, DATA[1:])
        assert left(share) == expected_left
    assert count(share) == 0  # none started at byte 0
    assert Client().get(url(share), HTTP_RANGE="bytes=1-").status_code == 410  # 4095 bytes do not fit
    assert body(Client().get(url(share), HTTP_RANGE="bytes=1-1000")) == DATA[1:1001]  # 1000 do
    assert left(share) == 26


def test_after_a_whole_copy_only_the_allowance_is_left(big):
    share = share_of(big, max_downloads=1)
    assert body(Client().get(url(share))) == DATA
    refused = Client().get(url(share), HTTP_RANGE="bytes=1-")
    assert refused.status_code == 410  # would be most of a second copy
    assert "A download that was already under way can still be finished" in refused.content.decode()
    assert "resume it in your browser, or with curl -C - or wget -c" in refused.content.decode()
    assert body(Client().get(url(share), HTTP_RANGE="bytes=3072-")) == DATA[3072:]  # what a broken end re-asks
    assert left(share) == 0
    assert Client().get(url(share), HTTP_RANGE="bytes=4095-").status_code == 410
    assert count(share) == 1


def test_a_range_refused_while_other_responses_hold_the_budget_is_asked_to_retry(big):
    """What a running response holds may come back (it stops early and
    settles): a range refused meanwhile gets 503 and Retry-After, not 410,
    and is served once the hold is returned; refused with nothing held, 410."""
    share = share_of(big, max_downloads=1)
    running = share.reserve_bytes(first=0, end=4096)  # a first connection still sending the copy
    held = Client().get(url(share), HTTP_RANGE="bytes=2048-")
    assert (held.status_code, held["Retry-After"]) == (503, "1")
    assert held.content.decode().startswith("Downloads of this link still in progress hold what is left")
    assert Client().get(url(share)).status_code == 410  # a new whole download: its copy is taken
    running.settle(1000)  # it stopped after 1000 bytes: the rest goes back
    assert body(Client().get(url(share), HTTP_RANGE="bytes=1000-")) == DATA[1000:]
    refused = Client().get(url(share), HTTP_RANGE="bytes=1000-")
    assert refused.status_code == 410  # nothing held: what is left will not grow
    assert "Retry-After" not in refused
    assert count(share) == 1


def test_unsharing_a_link_that_reached_its_limit_refuses_the_next_range(big):
    share = share_of(big, max_downloads=1)
    assert body(Client().get(url(share))) == DATA
    share.refresh_from_db()
    assert share.end_reason == Share.EndReason.DOWNLOAD_LIMIT
    assert Client().get(url(share), HTTP_RANGE="bytes=4000-").status_code == 206  # within the allowance
    assert share.unshare()
    share.refresh_from_db()
    assert (share.status, share.end_reason) == (Share.Status.UNSHARED, Share.EndReason.UNSHARED)
    assert Client().get(url(share), HTTP_RANGE="bytes=4000-").status_code == 410


def test_no_resume_once_the_link_was_unshared(big):
    share = share_of(big)
    client = Client()
    response = client.get(url(share))
    next(iter(response.streaming_content))
    response.close()
    share.unshare()
    assert client.get(url(share), HTTP_RANGE="bytes=1000-").status_code == 410


def test_downloads_are_sandboxed_whatever_their_type(alice, make_file):
    page = make_file(alice, name="page.html", data=b"<script>alert(1)</script>", content_type="text/html")
    response = Client().get(url(share_of(page)))
    assert response["Content-Security-Policy"] == "sandbox"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Disposition"].startswith("attachment")


def test_overlapping_ranges_yield_no_more_than_one_copy_and_the_allowance(alice, make_file):
    """Overlapping resumes with explicit ends, each re-asking what the one
    before sent: a limit-1 link of 1 MiB sends at most 1 MiB and its 256 KiB
    allowance, however the ranges overlap."""
    data = bytes(range(256)) * 4096  # 1 MiB
    share = share_of(make_file(alice, name="mib.bin", data=data), max_downloads=1)
    sent, statuses = 0, []
    for first, last in [(0, 262144), (1, 524288), (262145, 786432), (524289, 1048575), (786433, 1048575)]:
        response = Client().get(url(share), HTTP_RANGE=f"bytes={first}-{last}")
        statuses.append(response.status_code)
        if response.status_code == 206:
            got = body(response)
            assert got == data[first : last + 1]
            sent += len(got)
    assert sent <= len(data) + len(data) // 4
    # The third is one byte short of what is left; the fourth fits exactly.
    assert statuses == [206, 206, 410, 206, 410]
    assert (sent, left(share)) == (1310720, 0)
