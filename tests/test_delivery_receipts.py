"""Delivery receipts: each downloaded or resumed response says, once it
closed, how far its client got, and the owner's pages say it in words.

Here through Django's test client (no socket: a response's bytes read are
what it delivered); tests/test_delivery_receipts_http.py cuts real
connections to gunicorn with curl."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from sharing.models import Share, ShareEvent
from sharing.models.receipts import Receipt, record_batched, whole_copies

pytestmark = pytest.mark.django_db(transaction=True)
Kind = ShareEvent.Kind
DATA = bytes(range(256)) * 8192  # 2 MiB: several 256 KiB blocks


@pytest.fixture
def big(alice, make_file):
    return make_file(alice, name="big.bin", data=DATA, content_type="application/octet-stream")


def share_of(stored, **options) -> Share:
    return Share.create_for(file=stored, expires_at=timezone.now() + timedelta(hours=1), **options)


def drain(response) -> bytes:
    body = b"".join(response.streaming_content)
    response.close()
    return body


def broken_after_one_block(share) -> int:
    response = Client().get(f"/s/{share.token}")
    got = len(next(iter(response.streaming_content)))
    response.close()  # the client went away
    return got


def history_of(client, share) -> str:
    page = client.get(f"/shares/{share.pk}/").content.decode()
    return page.split('id="history-heading"', 1)[1]


@pytest.mark.parametrize("limit", [None, 1], ids=["without a limit", "with a limit"])
def test_a_cut_download_says_where_it_stopped_and_its_resume_completed(alice_web, big, limit):
    share = share_of(big, max_downloads=limit)
    got = broken_after_one_block(share)
    assert got == 256 * 1024
    resumed = Client().get(f"/s/{share.token}", HTTP_RANGE=f"bytes={got}-")
    assert drain(resumed) == DATA[got:]

    history = history_of(alice_web, share)
    assert '<strong>Downloaded</strong> <span class="detail">stopped at 12 %' in history  # 256 KiB of 2 MiB
    assert '<strong>Resumed</strong> <span class="detail">completed' in history
    assert "Delivered" not in history  # folded into the lines of the downloads they close
    assert whole_copies([share.pk]) == {share.pk: 1}


def test_a_whole_download_was_received_in_full_and_the_dashboard_counts_it(alice_web, big):
    share = share_of(big)
    for _ in range(2):
        assert drain(Client().get(f"/s/{share.token}")) == DATA
    broken_after_one_block(share)

    assert "received in full" in history_of(alice_web, share)
    row = alice_web.get("/").content.decode().split(f'data-share-id="{share.pk}"', 1)[1].split("</tr>")[0]
    assert '<small data-field="in_full">downloaded in full 2 times</small>' in row
    live = alice_web.get("/shares/live/", {"ids": share.pk}).json()["shares"][str(share.pk)]
    assert live["in_full"] == "downloaded in full 2 times"


def test_a_part_asked_for_and_received_says_how_far_it_reaches(alice_web, big):
    share = share_of(big)
    assert (
        drain(Client().get(f"/s/{share.token}", HTTP_RANGE=f"bytes=0-{len(DATA) // 2 - 1}")) == DATA[: len(DATA) // 2]
    )
    assert "received the part asked for, up to 50 %" in history_of(alice_web, share)
    assert whole_copies([share.pk]) == {}


def test_a_receipt_is_an_event_of_the_api_and_names_its_download(alice_client, big):
    share = share_of(big)
    broken_after_one_block(share)
    events = alice_client.get(f"/api/shares/{share.pk}/events/").json()["results"]
    downloaded, delivered = (next(e for e in events if e["kind"] == kind) for kind in ("downloaded", "delivered"))
    assert delivered["bytes"] == 256 * 1024
    assert delivered["details"] == {
        "download": downloaded["id"],
        "from": 0,
        "until": 256 * 1024,
        "size": len(DATA),
        "whole": False,
    }


def test_a_preview_and_a_head_get_no_receipt(alice, make_file):
    share = share_of(make_file(alice, name="notes.txt", data=b"some notes\n" * 100, content_type="text/plain"))
    assert Client().head(f"/s/{share.token}").status_code == 200
    preview = Client().get(f"/s/{share.token}/files/1/preview")
    assert preview.status_code == 200
    drain(preview)
    assert share.events.filter(kind=Kind.PREVIEWED).exists()
    assert not share.events.filter(kind=Kind.DELIVERED).exists()


def test_a_receipt_goes_to_the_webhooks_that_ask_for_it(alice_client, big):
    from webhooks.models import WebhookDelivery
    from webhooks.payloads import payload

    response = alice_client.post(
        "/api/webhooks/", {"url": "http://127.0.0.1:8999/hook", "events": ["delivered"]}, format="json"
    )
    assert response.status_code == 201, response.content
    share = share_of(big)
    assert drain(Client().get(f"/s/{share.token}")) == DATA

    (delivery,) = WebhookDelivery.objects.all()
    sent = payload(delivery.event)
    assert sent["type"] == "share.delivered"
    assert sent["data"]["details"]["whole"] is True
    assert sent["data"]["bytes"] == len(DATA)


def test_the_receipt_of_a_share_deleted_meanwhile_is_dropped_and_the_others_kept(big, caplog):
    from sharing.models.downloads import Sending
    from sharing.models.quick_downloads import Outcome, _run_batch

    gone, kept = share_of(big), share_of(big)
    sending = Sending(file_id=big.pk, size=big.size)
    reservations = [share.reserve_bytes(first=0, end=big.size, sending=sending) for share in (gone, kept)]
    gone_id = gone.pk
    Share.objects.filter(pk=gone_id).delete()
    receipts = [
        Receipt(reservation.event_id, 0, big.size, big.size).quick_event(reservation.share_id)
        for reservation in reservations
    ]
    # One batch: the deleted share's receipt is refused, the other written.
    outcomes = _run_batch("default", lambda: receipts)
    assert [outcome for outcome, _ in outcomes] == [Outcome.REFUSED, Outcome.ALLOWED]
    assert not ShareEvent.objects.filter(share_id=gone_id).exists()
    assert kept.events.filter(kind=Kind.DELIVERED).count() == 1
    # Written alone, it is dropped with a line in the log, nothing raised.
    with caplog.at_level("INFO", logger="sharing.models.receipts"):
        record_batched(gone_id, Receipt(reservations[0].event_id, 0, big.size, big.size))
    assert f"share {gone_id} was dropped" in caplog.text
