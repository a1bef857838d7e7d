"""Everything else a link does holds on an encrypted one, whose file the
server cannot read: its history, its webhooks' outbox, the first-download
notice, and reactivation. One test per feature, with that feature's own
helpers; what is downloaded is the stored ciphertext, which decrypts.

The rules over real HTTP (a race, the deadline, a resume):
tests/test_encrypted_links_http.py."""

import os

import pytest
from django.test import Client

from sharing.models import Share, ShareEvent
from tests.test_encrypted_links import encrypted_share, opened
from tests.test_lifecycle_reactivation import url as reactivate_url
from tests.test_notices_first_download import downloaded, sent_mail
from tests.test_share_events import drain, kinds, link, only
from tests.test_webhooks_outbox import deliveries, endpoint

pytestmark = pytest.mark.django_db(transaction=True)  # responses are closed, and settle, as a server's

Kind = ShareEvent.Kind
PLAINTEXT = os.urandom(200_000)  # four records


@pytest.fixture
def one_download(alice, alice_client, make_file):
    """A one-download encrypted link: (share, secret, body)."""
    return encrypted_share(alice_client, make_file, alice, PLAINTEXT, max_downloads=1)


def download(share: Share) -> tuple[int, bytes]:
    response = Client().get(link(share))
    return response.status_code, drain(response)


def test_its_history_records_the_download_of_its_ciphertext_and_the_limit(one_download):
    share, secret, body = one_download
    status, got = download(share)
    assert status == 200
    assert opened(secret, got) == PLAINTEXT
    assert kinds(share) == [Kind.CREATED, Kind.DOWNLOADED, Kind.DELIVERED, Kind.DOWNLOAD_LIMIT_REACHED]
    assert only(share, Kind.DOWNLOADED).bytes == len(body)
    assert only(share, Kind.DELIVERED).details["whole"] is True
    assert only(share, Kind.CREATED).details == {"max_downloads": 1, "password": False, "message": False}


def test_its_download_writes_one_webhook_delivery_to_the_outbox(alice, one_download):
    hook = endpoint(alice, ["downloaded"])
    share, _, _ = one_download
    assert download(share)[0] == 200
    (row,) = deliveries(endpoint=hook)
    assert (row.share_id, row.event.kind, row.event.bytes) == (share.pk, Kind.DOWNLOADED, share.size)
    assert row.delivered_at is None  # for the worker (runwebhooks) to send


def test_its_first_download_sends_the_notice_once_naming_only_the_neutral_name(alice, alice_client, make_file):
    share, _, _ = encrypted_share(alice_client, make_file, alice, PLAINTEXT, notify_first_download=True)
    for _ in range(2):
        response = downloaded(Client().get(link(share)))
        assert response.status_code == 200
    (message,) = sent_mail()
    assert message.to == [alice.email]
    assert message.subject == "Your link to encrypted-1 was downloaded"
    assert "minutes.txt" not in message.body  # the server never learnt the name


def test_used_up_then_reactivated_it_sends_its_ciphertext_and_metadata_again(alice_client, one_download):
    share, secret, body = one_download
    assert download(share)[0] == 200
    assert download(share)[0] == 410
    assert Client().get(f"/s/{share.token}/sealed").status_code == 410

    response = alice_client.post(reactivate_url(share), {"expires_in": 600, "reset_downloads": True}, format="json")
    assert response.status_code == 200, response.content

    assert Client().get(f"/s/{share.token}/sealed").status_code == 200
    status, got = download(share)
    assert (status, got) == (200, body)
    assert opened(secret, got) == PLAINTEXT
    assert kinds(share).count(Kind.DOWNLOADED) == 2
    assert Kind.REACTIVATED in kinds(share)
