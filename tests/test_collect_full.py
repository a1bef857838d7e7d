"""A full upload request says so before anything is chosen: its page shows
"This request is full" with no form, a file posted to it anyway is not
kept, its tus endpoint refuses, and the owner's page (and the JSON its poll
reads) says Full rather than Open. One rule, UploadRequest.is_full."""

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from collect.ending import close_request
from collect.models import UploadRequest
from collect.receiving import receive_posted_file
from sharing.models import StoredFile
from tests.test_uploads_support import create, metadata

pytestmark = pytest.mark.django_db


def request_of(owner, **fields) -> UploadRequest:
    return UploadRequest.create_for(owner=owner, expires_at=timezone.now() + timedelta(hours=1), **fields)


def page(upload_request: UploadRequest) -> str:
    return f"/r/{upload_request.token}/"


def arrive(upload_request, name="scan.pdf", data=b"%PDF-1.4 hello"):
    return receive_posted_file(upload_request, SimpleUploadedFile(name, data))


@pytest.mark.parametrize("limits", [{"max_files": 1}, {"max_bytes": 14}], ids=["files", "bytes"])
def test_a_full_requests_page_says_so_and_offers_no_form(alice, limits):
    upload_request = request_of(alice, title="Scans", **limits)
    arrive(upload_request)
    response = Client().get(page(upload_request))
    assert response.status_code == 200  # still open: a place given back would take a file again
    html = response.content.decode()
    assert "This request is full." in html
    assert 'type="file"' not in html
    assert "Drop files" not in html


def test_an_open_request_with_room_shows_the_form_and_no_full_notice(alice):
    upload_request = request_of(alice, max_files=2, max_bytes=100)
    arrive(upload_request)  # 14 bytes
    html = Client().get(page(upload_request)).content.decode()
    assert 'data-bytes-left="86">86\xa0bytes<' in html
    assert "This request is full." not in html
    assert "{#" not in html  # no template comment left as text
    assert 'type="file"' in html
    assert "data-files-left>1<" in html


def test_a_file_posted_to_a_full_request_is_not_kept(alice):
    upload_request = request_of(alice, max_bytes=14)
    arrive(upload_request)
    response = Client().post(page(upload_request), {"files": [SimpleUploadedFile("more.txt", b"more")]})
    assert response.status_code == 413
    html = response.content.decode()
    assert "more.txt was not sent. This request is full: it takes no more files." in html
    assert "This request is full." in html
    assert list(StoredFile.objects.values_list("name", flat=True)) == ["scan.pdf"]


@pytest.mark.parametrize(
    ("limits", "said"),
    [({"max_files": 1}, "accepts 1 file, and it has it."), ({"max_bytes": 14}, "This request is full")],
    ids=["files", "bytes"],
)
def test_the_tus_endpoint_of_a_full_request_says_it_is_full(alice, limits, said):
    upload_request = request_of(alice, **limits)
    arrive(upload_request)
    response = create(APIClient(), 1, metadata(filename="one.txt"), endpoint=f"/r/{upload_request.token}/uploads/")
    assert response.status_code == 413, response.content
    assert said in response.json()["detail"]


def row_of(client, upload_request):
    body = client.get("/requests/places/", {"id": [upload_request.pk]}).json()
    (row,) = body["requests"]
    return row


def test_the_owners_page_and_its_poll_say_full_then_open_then_closed(alice_web, alice):
    upload_request = request_of(alice, title="Receipts", max_files=1)
    assert row_of(alice_web, upload_request)["state"] == "Open"
    received = arrive(upload_request)
    html = alice_web.get("/requests/").content.decode()
    assert '<dd data-field="state">\n                  Full\n' in html
    row = row_of(alice_web, upload_request)
    assert (row["state"], row["full"], row["files"]) == ("Full", True, "1 of 1")
    assert received.pk
    close_request(upload_request)
    row = row_of(alice_web, upload_request)
    assert (row["state"], row["open"], row["full"]) == ("Closed by you", False, False)
    assert row["ended_at_utc"].endswith(" UTC")


def test_the_poll_answers_only_for_ones_own_requests(alice_web, bob):
    theirs = request_of(bob, max_files=1)
    response = alice_web.get("/requests/places/", {"id": [theirs.pk]})
    assert response.status_code == 200
    assert response.json() == {"requests": []}
    assert response["Cache-Control"] == "no-store"


@pytest.mark.parametrize("ids", [["x"], [str(n) for n in range(1000)]], ids=["not-a-number", "too-many"])
def test_the_poll_refuses_bad_ids_with_a_400(alice_web, ids):
    response = alice_web.get("/requests/places/", {"id": ids})
    assert response.status_code == 400
    assert "id" in response.json()["detail"]


def test_the_poll_needs_a_sign_in():
    assert Client().get("/requests/places/").status_code == 302
