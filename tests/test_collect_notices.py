"""The owner of an upload request hears of each file that arrives, by email
when the request asks for it: through tus and through the page's form, once
per file, and never for an upload that did not finish."""

from datetime import timedelta
from urllib.parse import urlparse

import pytest
from django.core import mail
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from collect.models import UploadRequest
from notices.worker import default_worker
from tests.test_uploads_support import create, metadata, patch, path_of

pytestmark = pytest.mark.django_db(transaction=True)


def sent_mail() -> list:
    assert default_worker().flush(10), "the mail worker did not finish"
    return list(mail.outbox)


def request_of(owner, **fields) -> UploadRequest:
    return UploadRequest.create_for(owner=owner, expires_at=timezone.now() + timedelta(hours=1), **fields)


def send_by_tus(upload_request: UploadRequest, data: bytes, name: str) -> int:
    response = create(APIClient(), len(data), metadata(filename=name), endpoint=f"/r/{upload_request.token}/uploads/")
    return patch(APIClient(), path_of(response), 0, data).status_code


def test_a_file_arriving_by_tus_is_mailed_to_the_owner_once(alice):
    upload_request = request_of(alice, title="Contracts", notify_by_email=True)
    assert send_by_tus(upload_request, b"signed", "contract.pdf") == 204
    (message,) = sent_mail()
    assert message.to == [alice.email]
    assert message.subject == "contract.pdf arrived through your upload request"
    assert '"Contracts"' in message.body
    assert upload_request.token not in message.body  # the live link is not mailed around


def test_a_file_posted_by_the_form_is_mailed_too(alice):
    upload_request = request_of(alice, notify_by_email=True)
    page = f"/r/{upload_request.token}/"
    response = Client().post(page, {"files": [SimpleUploadedFile("scan.png", b"png")]})
    assert response.status_code == 303
    assert urlparse(response["Location"]).path == page
    (message,) = sent_mail()
    assert message.subject == "scan.png arrived through your upload request"


def test_no_mail_without_the_option_nor_for_an_unfinished_upload(alice):
    quiet = request_of(alice)
    assert send_by_tus(quiet, b"data", "a.txt") == 204
    loud = request_of(alice, notify_by_email=True)
    unfinished = create(APIClient(), 10, metadata(filename="b.txt"), endpoint=f"/r/{loud.token}/uploads/")
    assert patch(APIClient(), path_of(unfinished), 0, b"01234").status_code == 204
    assert sent_mail() == []
