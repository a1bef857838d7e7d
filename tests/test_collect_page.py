"""The page of an upload request, through Django's test client: what it
shows, its password, its end, and the form that sends files without
JavaScript under the same limits as the resumable uploads."""

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone

from collect.models import ReceivedFile, UploadRequest
from sharing.models import SharingPolicy, StoredFile

pytestmark = pytest.mark.django_db


def request_of(owner, **fields) -> UploadRequest:
    return UploadRequest.create_for(owner=owner, expires_at=timezone.now() + timedelta(hours=1), **fields)


def page(upload_request: UploadRequest) -> str:
    return f"/r/{upload_request.token}/"


def test_the_page_shows_what_is_asked_escaped_with_the_limits_and_the_resumable_form(alice):
    upload_request = request_of(alice, title="Scans", note="<b>all</b> pages\nplease", max_files=3, max_bytes=2048)
    response = Client().get(page(upload_request))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Scans" in html
    assert "&lt;b&gt;all&lt;/b&gt; pages<br>please" in html
    assert "alice asks you for files." in html
    assert "data-files-left>3<" in html
    assert f'data-tus-endpoint="/r/{upload_request.token}/uploads/"' in html
    assert "script-src 'self'" in response["Content-Security-Policy"]


def test_a_file_posted_without_javascript_arrives_and_counts(alice):
    upload_request = request_of(alice, max_files=2)
    response = Client().post(page(upload_request), {"files": [SimpleUploadedFile("a.txt", b"hello")]}, follow=True)
    assert response.status_code == 200
    assert "Sent a.txt." in response.content.decode()
    stored = StoredFile.objects.get(owner=alice)
    assert ReceivedFile.objects.get().file == stored
    upload_request.refresh_from_db()
    assert (upload_request.files_taken, upload_request.bytes_taken) == (1, 5)


def test_the_form_keeps_the_files_that_fit_and_names_the_one_that_did_not(alice):
    upload_request = request_of(alice, max_files=1)
    files = [SimpleUploadedFile("first.txt", b"1"), SimpleUploadedFile("second.txt", b"2")]
    response = Client().post(page(upload_request), {"files": files})
    assert response.status_code == 413
    html = response.content.decode()
    assert "second.txt was not sent." in html
    assert "accepts 1 file" in html
    assert list(StoredFile.objects.values_list("name", flat=True)) == ["first.txt"]


def test_the_owners_quota_refuses_a_posted_file_with_a_413_and_keeps_nothing(alice):
    SharingPolicy.objects.update_or_create(pk=SharingPolicy.SINGLETON_ID, defaults={"default_quota_bytes": 3})
    upload_request = request_of(alice)
    response = Client().post(page(upload_request), {"files": [SimpleUploadedFile("big.bin", b"12345")]})
    assert response.status_code == 413
    assert "no room left" in response.content.decode()
    assert not StoredFile.objects.exists()
    assert UploadRequest.objects.get().files_taken == 0


def test_a_password_request_shows_its_form_first_and_refuses_a_post_of_files(alice):
    upload_request = request_of(alice, password="s3cret")
    client = Client()
    locked = client.get(page(upload_request))
    assert locked.status_code == 200
    assert "protected by a password" in locked.content.decode()
    posted = client.post(page(upload_request), {"files": [SimpleUploadedFile("a.txt", b"x")]})
    assert "protected by a password" in posted.content.decode()
    assert not StoredFile.objects.exists()
    wrong = client.post(page(upload_request), {"password": "nope"})
    assert wrong.status_code == 403
    assert "Wrong password" in wrong.content.decode()
    assert client.post(page(upload_request), {"password": "s3cret"}).status_code == 303
    assert "data-tus-endpoint" in client.get(page(upload_request)).content.decode()


def test_an_ended_request_answers_410_and_takes_no_posted_file(alice):
    upload_request = request_of(alice)
    UploadRequest.objects.filter(pk=upload_request.pk).update(expires_at=timezone.now())
    assert Client().get(page(upload_request)).status_code == 410
    posted = Client().post(page(upload_request), {"files": [SimpleUploadedFile("a.txt", b"x")]})
    assert posted.status_code == 410
    assert not StoredFile.objects.exists()


def test_an_unknown_request_is_a_404_even_for_a_password(alice):
    missing = "A" * 22
    assert Client().get(f"/r/{missing}/").status_code == 404
    assert Client().post(f"/r/{missing}/", {"password": "x"}).status_code == 404
