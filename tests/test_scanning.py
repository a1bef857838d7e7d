"""Malware scanning with a real clamd (tests.clamd: Debian's clamd with the
EICAR signature only): the EICAR file uploaded by multipart, by tus and
through an upload request is found infected and its link never sends a
byte of it; a clean file is "being checked" until its scan, then served;
files larger than SCAN_MAX_BYTES follow the policy; on the disk and in a
bucket."""

from datetime import timedelta
from urllib.parse import urlparse

import pytest
from django.core import mail
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from collect.models import ReceivedFile
from notices.worker import default_worker
from scanning.clamd import Clamd
from scanning.worker import ScanWorker
from sharing.models import BytesToDelete, ScanState, Share, ShareEvent, StoredFile
from tests.clamd import EICAR, SIGNATURE
from tests.test_collect_api import endpoint, make_request
from tests.test_uploads_support import create, metadata, new_upload, patch, path_of
from webhooks.models import FILE_INFECTED, WebhookDelivery, WebhookEndpoint

# transaction=True: what follows a commit (the bytes deleted, the mails) runs.
pytestmark = pytest.mark.django_db(transaction=True)

CLEAN = b"quarterly numbers, nothing else\n" * 100


def share_of(stored: StoredFile) -> Share:
    return Share.create_for(file=stored, expires_at=timezone.now() + timedelta(hours=1))


def fetch(share: Share, path: str = "") -> tuple[int, bytes, dict]:
    """A script's GET of the link (or of `path` under it): status, every byte sent, headers."""
    response = Client().get(f"/s/{share.token}{path}")
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return response.status_code, body, response.headers


def scan_all() -> ScanWorker:
    worker = ScanWorker()
    while worker.run_once():
        pass
    return worker


def mails() -> list:
    assert default_worker().flush(10), "the mail worker did not finish"
    return list(mail.outbox)


def upload_multipart(client, data: bytes, name: str = "file.bin") -> StoredFile:
    response = client.post("/api/files/", {"file": SimpleUploadedFile(name, data)})
    assert response.status_code == 201, response.content
    return StoredFile.objects.get(pk=response.json()["id"])


def upload_tus(client, data: bytes, name: str = "file.bin") -> StoredFile:
    path = new_upload(client, len(data), filename=name)
    assert patch(client, path, 0, data).status_code == 204
    return StoredFile.objects.get(owner__username="alice", name=name)


def assert_never_sends(share: Share, data: bytes) -> None:
    """No path of the link sends a byte of `data`."""
    for path in ("", "/download", "/files/1", "/all.zip"):
        status, body, _ = fetch(share, path)
        assert status >= 400, (path, status)
        assert data not in body
        assert EICAR[:20] not in body


@pytest.fixture
def storage(either_storage):
    return either_storage[0]


def test_clamd_answers_ping_clean_and_eicar_even_split_across_chunks(clamd):
    client = Clamd(clamd.url, timeout=30)
    assert client.ping()
    assert not client.instream([CLEAN]).infected
    assert client.instream([EICAR]).signature.startswith(SIGNATURE)
    assert client.instream([CLEAN, EICAR[:7], EICAR[7:]]).infected


@pytest.mark.parametrize("how", ["multipart", "tus"])
def test_eicar_uploaded_is_found_infected_never_served_and_the_owner_is_told(
    how, clamd, storage, alice, alice_client, settings
):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    alice.email = "alice@example.com"
    alice.save()
    hook = WebhookEndpoint.objects.create(
        owner=alice, url="https://hooks.example.com/in", events=[FILE_INFECTED, "infected"], secret="whsec_x"
    )
    stored = (upload_multipart if how == "multipart" else upload_tus)(alice_client, EICAR, "eicar.com")
    assert stored.scan_state == ScanState.PENDING
    share = share_of(stored)
    # From the upload's first moment: being checked, never the bytes.
    status, body, headers = fetch(share)
    assert status == 503
    assert headers["Retry-After"]
    assert EICAR not in body
    assert_never_sends(share, EICAR)
    owner_copy = alice_client.get(f"/api/files/{stored.pk}/content/")
    assert owner_copy.status_code == 409  # not even to its owner before the scan

    worker = scan_all()

    assert worker.infected == 1
    stored.refresh_from_db()
    assert (stored.scan_state, stored.scan_signature) == (ScanState.INFECTED, f"{SIGNATURE}.UNOFFICIAL")
    assert stored.content.name == ""  # its bytes removed (SCAN_INFECTED_BYTES=delete)
    assert not BytesToDelete.objects.exists()  # deleted after the commit, not only recorded
    share.refresh_from_db()
    assert (share.status, share.end_reason) == (Share.Status.UNSHARED, Share.EndReason.INFECTED)
    assert ShareEvent.objects.filter(share=share, kind=ShareEvent.Kind.INFECTED).count() == 1
    status, body, _ = fetch(share)
    assert status == 410
    assert b"malware" in body
    assert_never_sends(share, EICAR)
    # The owner is told: an email, and the webhook event.
    sent = [message for message in mails() if "eicar.com" in message.subject]
    assert len(sent) == 1
    assert SIGNATURE in sent[0].body
    kinds = sorted(
        (delivery.payload or {}).get("type", "share-event")
        for delivery in WebhookDelivery.objects.filter(endpoint=hook)
    )
    assert kinds == [FILE_INFECTED, "share-event"]
    assert alice_client.get(f"/api/files/{stored.pk}/content/").status_code == 410
    # The API and a new share say so.
    shown = alice_client.get(f"/api/files/{stored.pk}/").json()
    assert (shown["scan_state"], shown["scan_signature"]) == ("infected", stored.scan_signature)
    refused = alice_client.post("/api/shares/", {"file_id": stored.pk, "expires_in": 3600}, format="json")
    assert refused.status_code == 400


def test_eicar_through_an_upload_request_is_infected_and_never_arrives(
    clamd, storage, alice, alice_client, alice_web, settings
):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    alice.email = "alice@example.com"
    alice.save()
    made = make_request(alice_client, notify_by_email=True)
    uploader = APIClient()
    response = create(uploader, len(EICAR), metadata(filename="invoice.pdf"), endpoint=endpoint(made))
    assert response.status_code == 201
    assert patch(uploader, path_of(response), 0, EICAR).status_code == 204
    received = ReceivedFile.objects.get()
    assert received.state == "being_checked"
    shown = alice_client.get(f"/api/upload-requests/{made['id']}/").json()
    assert [f["state"] for f in shown["files"]] == ["being_checked"]
    assert not [message for message in mails() if "arrived" in message.subject]
    assert "being checked for viruses" in alice_web.get("/requests/").content.decode()

    scan_all()

    received.refresh_from_db()
    assert received.state == "infected"
    assert "malware found: removed" in alice_web.get("/requests/").content.decode()
    assert received.file.scan_state == ScanState.INFECTED
    sent = mails()
    assert not [message for message in sent if "arrived" in message.subject]
    assert [message for message in sent if "invoice.pdf" in message.subject and "Malware" in message.subject]


def test_a_clean_file_through_an_upload_request_arrives_once_scanned(clamd, alice, alice_client, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    alice.email = "alice@example.com"
    alice.save()
    made = make_request(alice_client, notify_by_email=True)
    response = Client().post(urlpath(made), {"files": [SimpleUploadedFile("notes.txt", CLEAN)]})
    assert response.status_code in (200, 303)
    assert ReceivedFile.objects.get().state == "being_checked"
    assert not mails()

    scan_all()

    assert ReceivedFile.objects.get().state == "arrived"
    assert len([message for message in mails() if "arrived" in message.subject]) == 1


def urlpath(made: dict) -> str:
    return urlparse(made["url"]).path


def test_a_clean_file_is_being_checked_then_served(clamd, storage, alice, alice_client):
    stored = upload_multipart(alice_client, CLEAN, "numbers.txt")
    share = share_of(stored)
    page = Client().get(f"/s/{share.token}", HTTP_ACCEPT="text/html")
    assert page.status_code == 200
    html = page.content.decode()
    assert "being checked for viruses" in html
    assert "data-being-checked" in html
    assert "scanwait.js" in html
    assert f"/s/{share.token}/download" not in html
    status, _body, headers = fetch(share)
    assert (status, headers["Retry-After"]) == (503, "5")
    assert alice_client.get(f"/api/files/{stored.pk}/").json()["scan_state"] == "pending"

    scan_all()

    stored.refresh_from_db()
    assert stored.scan_state == ScanState.CLEAN
    assert fetch(share)[:2] == (200, CLEAN)
    page = Client().get(f"/s/{share.token}", HTTP_ACCEPT="text/html").content.decode()
    assert "being checked" not in page
    assert f"/s/{share.token}/download" in page


def test_a_file_over_scan_max_bytes_is_too_big_and_withheld_unless_the_policy_serves_it(
    clamd, alice, alice_client, settings
):
    settings.SCAN_MAX_BYTES = len(CLEAN) - 1
    stored = upload_multipart(alice_client, CLEAN, "big.bin")
    share = share_of(stored)
    scan_all()
    stored.refresh_from_db()
    assert stored.scan_state == ScanState.TOO_BIG
    status, body, headers = fetch(share)
    assert status == 403
    assert "Retry-After" not in headers
    assert CLEAN not in body
    page = Client().get(f"/s/{share.token}", HTTP_ACCEPT="text/html").content.decode()
    assert "could not be checked for viruses" in page

    settings.SCAN_ABOVE_MAX = "serve"
    assert fetch(share)[:2] == (200, CLEAN)


def test_scanning_off_changes_nothing(alice, alice_client, settings):
    settings.CLAMD_URL = ""
    stored = upload_multipart(alice_client, CLEAN)
    assert (stored.scan_state, stored.scan_due_at) == (ScanState.UNSCANNED, None)
    assert fetch(share_of(stored))[:2] == (200, CLEAN)
