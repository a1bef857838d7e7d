"""A file arriving through an upload request reaches the owner's webhook
endpoints that asked for it: written with the arrival (none for an upload
that did not finish), signed and sent by the worker like a share's event."""

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from collect.models import ReceivedFile, UploadRequest
from tests.test_uploads_support import create, metadata, patch, path_of
from tests.webhook_receiver import Receiver
from webhooks.models import FILE_RECEIVED, WebhookDelivery, WebhookEndpoint
from webhooks.signing import verify
from webhooks.worker import DeliveryWorker

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def receiver():
    receiver = Receiver()
    yield receiver
    receiver.close()


def request_of(owner) -> UploadRequest:
    return UploadRequest.create_for(owner=owner, expires_at=timezone.now() + timedelta(hours=1), title="Scans")


def test_an_arrival_is_delivered_signed_to_the_endpoints_that_want_it(alice, bob, receiver, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    wanting = WebhookEndpoint.objects.create(owner=alice, url=receiver.url, events=[FILE_RECEIVED])
    WebhookEndpoint.objects.create(owner=alice, url=receiver.url, events=["expired"])
    WebhookEndpoint.objects.create(owner=bob, url=receiver.url, events=[FILE_RECEIVED])
    upload_request = request_of(alice)
    response = create(APIClient(), 4, metadata(filename="scan.pdf"), endpoint=f"/r/{upload_request.token}/uploads/")
    assert patch(APIClient(), path_of(response), 0, b"%PDF").status_code == 204

    (delivery,) = WebhookDelivery.objects.all()
    received = ReceivedFile.objects.get()
    assert delivery.endpoint == wanting
    assert (delivery.event_id, delivery.share_id) == (None, None)
    assert DeliveryWorker().run_once()
    (request,) = receiver.received
    verify(wanting.secret, request.headers, request.body, now=int(request.headers["webhook-timestamp"]))
    body = request.json
    assert body["type"] == "upload_request.file_received"
    assert body["data"] == {
        "upload_request_id": upload_request.pk,
        "received_id": received.pk,
        "name": "scan.pdf",
        "size": 4,
        "file_id": received.file_id,
        "received_at": body["timestamp"],
    }
    delivery.refresh_from_db()
    assert delivery.delivered_at is not None


def test_a_posted_file_is_delivered_too_and_an_unfinished_upload_never(alice, receiver):
    WebhookEndpoint.objects.create(owner=alice, url=receiver.url, events=[FILE_RECEIVED])
    upload_request = request_of(alice)
    unfinished = create(APIClient(), 10, metadata(filename="a.txt"), endpoint=f"/r/{upload_request.token}/uploads/")
    assert patch(APIClient(), path_of(unfinished), 0, b"01234").status_code == 204
    assert not WebhookDelivery.objects.exists()
    posted = Client().post(f"/r/{upload_request.token}/", {"files": [SimpleUploadedFile("b.txt", b"hi")]})
    assert posted.status_code == 303
    assert [d.payload["data"]["name"] for d in WebhookDelivery.objects.all()] == ["b.txt"]


def test_the_api_takes_the_kind_and_names_an_unknown_one(alice_client, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True

    def register(events):
        return alice_client.post("/api/webhooks/", {"url": "http://127.0.0.1:9/", "events": events}, format="json")

    known = register([FILE_RECEIVED, "expired"])
    assert known.status_code == 201
    assert sorted(known.json()["events"]) == ["expired", FILE_RECEIVED]
    unknown = register(["upload_request.file_lost"])
    assert unknown.status_code == 400
    assert "upload_request.file_lost" in str(unknown.json()["events"])
