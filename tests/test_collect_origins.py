"""A file that arrived through an upload request names that request in the
owner's file list ({% origins_of %} and {% arrived_through %}): one query
for a whole list, the title shown as text, nothing for a file uploaded by
the owner."""

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.template import Context, Template
from django.utils import timezone, translation

from collect.models import UploadRequest
from collect.receiving import receive_posted_file
from sharing.models import StoredFile

pytestmark = pytest.mark.django_db

LIST = Template(
    "{% load origins %}{% origins_of files as origins %}"
    "{% for file in files %}[{{ file.name }}{% arrived_through file origins %}]{% endfor %}"
)


def request_of(owner, **fields) -> UploadRequest:
    return UploadRequest.create_for(owner=owner, expires_at=timezone.now() + timedelta(hours=1), **fields)


def test_a_received_file_names_its_request_and_an_uploaded_one_nothing(alice, make_file, django_assert_num_queries):
    make_file(alice, name="mine.txt")
    scans = request_of(alice, title="Scans <b>of March</b>")
    receive_posted_file(scans, SimpleUploadedFile("scan.pdf", b"%PDF-1.4"))
    receive_posted_file(request_of(alice), SimpleUploadedFile("untitled.txt", b"hi"))
    files = list(StoredFile.objects.filter(owner=alice).order_by("name"))
    with django_assert_num_queries(1):
        html = LIST.render(Context({"files": files}))
    assert "[mine.txt]" in html
    assert "scan.pdf <span class" in html
    assert "from the upload request “Scans &lt;b&gt;of March&lt;/b&gt;”" in html
    assert "from the upload request “Untitled request”" in html
    assert f'data-request-id="{scans.pk}"' in html


def test_the_origin_is_said_in_french(alice):
    receive_posted_file(request_of(alice, title="Scans"), SimpleUploadedFile("scan.pdf", b"%PDF-1.4"))
    with translation.override("fr"):
        html = LIST.render(Context({"files": list(StoredFile.objects.all())}))
    assert "reçu par la demande de fichiers «\xa0Scans\xa0»" in html


def test_a_file_whose_request_was_deleted_names_none(alice):
    upload_request = request_of(alice, title="Gone")
    receive_posted_file(upload_request, SimpleUploadedFile("kept.pdf", b"%PDF-1.4"))
    upload_request.delete()
    html = LIST.render(Context({"files": list(StoredFile.objects.all())}))
    assert html == "[kept.pdf]"


def test_the_dashboards_file_list_names_the_request_a_file_came_through(alice, alice_web):
    receive_posted_file(request_of(alice, title="Receipts"), SimpleUploadedFile("march.pdf", b"%PDF-1.4"))
    html = alice_web.get("/").content.decode()
    assert "from the upload request “Receipts”" in html
