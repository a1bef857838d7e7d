"""/api/files/: upload, list, show, download and delete your own files."""

import hashlib
from datetime import timedelta

import pytest
from django.core.files.storage import storages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from sharing.models import Share, StoredFile
from tests.helpers import stored_names

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("either_storage")]

FILE_FIELDS = {
    "id",
    "name",
    "size",
    "content_type",
    "sha256",
    "created_at",
    "delete_when_unshared",
    "scan_state",
    "scan_signature",
    "scanned_at",
}


def upload(client, name="notes.txt", data=b"some bytes\n", content_type="text/plain"):
    return client.post("/api/files/", {"file": SimpleUploadedFile(name, data, content_type=content_type)})


def read_streaming(response) -> bytes:
    return b"".join(response.streaming_content)


# --- upload -------------------------------------------------------------------


def test_upload_returns_the_stored_metadata(alice_client, alice, media_root):
    data = b"quarterly numbers\n" * 100

    response = upload(alice_client, "report.csv", data, "text/csv")

    assert response.status_code == 201
    body = response.json()
    assert set(body) == FILE_FIELDS
    assert body["name"] == "report.csv"
    assert body["size"] == len(data)
    assert body["content_type"] == "text/csv"
    assert body["sha256"] == hashlib.sha256(data).hexdigest()
    stored = StoredFile.objects.get(pk=body["id"])
    assert stored.owner == alice
    with storages["default"].open(stored.content.name, "rb") as handle:
        assert handle.read() == data


def test_upload_keeps_only_the_base_name(alice_client):
    response = upload(alice_client, name="../../etc/passwd")

    assert response.status_code == 201
    assert response.json()["name"] == "passwd"


def test_upload_of_an_empty_file_is_refused_naming_it(alice_client):
    response = upload(alice_client, data=b"")

    assert response.status_code == 400
    assert response.json() == {"file": ["notes.txt is empty (0 bytes): there is nothing to share."]}
    assert not StoredFile.objects.exists()


def test_upload_without_file_names_the_field(alice_client):
    response = alice_client.post("/api/files/", {"name": "x"})

    assert response.status_code == 400
    assert response.json() == {"file": ["No file was submitted."]}
    assert not StoredFile.objects.exists()


def test_upload_of_a_plain_value_instead_of_a_file_is_400(alice_client):
    response = alice_client.post("/api/files/", {"file": "not a file"})

    assert response.status_code == 400
    assert "file" in response.json()


def test_upload_as_json_is_refused(alice_client):
    response = alice_client.post("/api/files/", {"file": "aGVsbG8="}, format="json")

    assert response.status_code == 415


def test_upload_at_the_limit_is_accepted(alice_client, settings):
    settings.MAX_UPLOAD_BYTES = 10

    response = upload(alice_client, data=b"x" * 10)

    assert response.status_code == 201


def test_upload_over_the_limit_is_413(alice_client, settings, media_root):
    settings.MAX_UPLOAD_BYTES = 10

    response = upload(alice_client, data=b"x" * 11)

    assert response.status_code == 413
    assert response.json() == {"detail": "The file is larger than the maximum upload size of 10 bytes."}
    assert not StoredFile.objects.exists()
    assert stored_names() == []


def test_declared_oversized_body_is_refused_before_reading(alice_client, settings):
    settings.MAX_UPLOAD_BYTES = 10

    # The body is small, but the declared length says it is far over the limit.
    response = alice_client.post(
        "/api/files/",
        {"file": SimpleUploadedFile("a.txt", b"abc")},
        CONTENT_LENGTH=str(10 + 10 * 1024 * 1024),
    )

    assert response.status_code == 413
    assert not StoredFile.objects.exists()


# --- list and show ----------------------------------------------------------


def test_list_is_paginated_newest_first_and_own_only(alice_client, alice, bob, make_file):
    older = make_file(alice, "a.txt")
    newer = make_file(alice, "b.txt")
    StoredFile.objects.filter(pk=older.pk).update(created_at=timezone.now() - timedelta(hours=1))
    make_file(bob, "bobs.txt")

    response = alice_client.get("/api/files/")

    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"count", "next", "previous", "results"}
    assert body["count"] == 2
    assert body["next"] is None
    assert body["previous"] is None
    assert [item["id"] for item in body["results"]] == [newer.pk, older.pk]
    assert set(body["results"][0]) == FILE_FIELDS


def test_list_pages(alice_client, alice, make_file):
    for i in range(3):
        make_file(alice, f"{i}.txt")

    first = alice_client.get("/api/files/?page_size=2").json()
    second = alice_client.get(first["next"]).json()

    assert first["count"] == 3
    assert len(first["results"]) == 2
    assert first["next"].startswith("http://testserver/api/files/?")
    assert len(second["results"]) == 1
    assert second["next"] is None
    assert second["previous"] is not None


def test_page_past_the_end_is_404(alice_client, alice, make_file):
    make_file(alice)

    assert alice_client.get("/api/files/?page=9").status_code == 404


def test_retrieve(alice_client, alice, make_file):
    stored = make_file(alice, "x.bin", b"\x00\x01", "application/octet-stream")

    response = alice_client.get(f"/api/files/{stored.pk}/")

    assert response.status_code == 200
    assert response.json() == {
        "id": stored.pk,
        "name": "x.bin",
        "size": 2,
        "content_type": "application/octet-stream",
        "sha256": hashlib.sha256(b"\x00\x01").hexdigest(),
        "created_at": stored.created_at.isoformat().replace("+00:00", "Z"),
        "delete_when_unshared": False,
        "scan_state": "unscanned",
        "scan_signature": "",
        "scanned_at": None,
    }


@pytest.mark.parametrize("file_id", ["999999", "abc", "99999999999999999999999"])
def test_retrieve_unknown_is_404(alice_client, file_id):
    assert alice_client.get(f"/api/files/{file_id}/").status_code == 404


# --- owner download -----------------------------------------------------------


def test_owner_download(alice_client, alice, make_file):
    data = b"%PDF-1.4 pretend\n"
    stored = make_file(alice, "Q3 report.pdf", data, "application/pdf")

    response = alice_client.get(f"/api/files/{stored.pk}/content/")

    assert response.status_code == 200
    assert read_streaming(response) == data
    assert response["Content-Type"] == "application/pdf"
    assert response["Content-Length"] == str(len(data))
    assert response["Content-Disposition"] == 'attachment; filename="Q3 report.pdf"'


def test_owner_download_of_a_non_ascii_name_uses_rfc6266(alice_client, alice, make_file):
    stored = make_file(alice, "résumé €.txt")

    response = alice_client.get(f"/api/files/{stored.pk}/content/")

    assert response.status_code == 200
    assert response["Content-Disposition"] == (
        "attachment; filename=\"resume _.txt\"; filename*=utf-8''r%C3%A9sum%C3%A9%20%E2%82%AC.txt"
    )


def test_owner_download_ignores_the_accept_header(alice_client, alice, make_file):
    stored = make_file(alice, "a.pdf", b"pdf", "application/pdf")

    response = alice_client.get(f"/api/files/{stored.pk}/content/", HTTP_ACCEPT="application/pdf")

    assert response.status_code == 200
    assert read_streaming(response) == b"pdf"


def test_owner_head_has_the_headers(alice_client, alice, make_file):
    stored = make_file(alice, "a.txt", b"12345")

    response = alice_client.head(f"/api/files/{stored.pk}/content/")

    assert response.status_code == 200
    assert response["Content-Length"] == "5"


def test_owner_download_of_missing_bytes_is_410(alice_client, alice, make_file):
    stored = make_file(alice)
    stored.content.storage.delete(stored.content.name)

    response = alice_client.get(f"/api/files/{stored.pk}/content/")

    assert response.status_code == 410
    assert response.json() == {"detail": "The file's content is missing from storage."}


# --- delete -------------------------------------------------------------------


def test_delete_unshares_active_shares_and_removes_bytes(
    alice_client, alice, make_file, media_root, django_capture_on_commit_callbacks
):
    stored = make_file(alice)
    active = Share.create_for(file=stored, expires_at=timezone.now() + timedelta(days=1))
    ended = Share.create_for(file=stored, expires_at=timezone.now() + timedelta(days=1))
    ended.unshare()
    ended_at = ended.ended_at

    with django_capture_on_commit_callbacks(execute=True):
        response = alice_client.delete(f"/api/files/{stored.pk}/")

    assert response.status_code == 204
    assert not StoredFile.objects.filter(pk=stored.pk).exists()
    assert not storages["default"].exists(stored.content.name)
    active.refresh_from_db()
    assert (active.status, active.end_reason, active.files) == ("unshared", "file_deleted", [])
    assert active.ended_at is not None
    ended.refresh_from_db()
    assert (ended.status, ended.end_reason, ended.ended_at) == ("unshared", "unshared", ended_at)
    # The share records stay, for history.
    assert Share.objects.count() == 2
    assert alice_client.get(f"/api/files/{stored.pk}/").status_code == 404


def test_put_and_patch_are_not_allowed(alice_client, alice, make_file):
    stored = make_file(alice)

    assert alice_client.put(f"/api/files/{stored.pk}/", {"name": "x"}).status_code == 405
    assert alice_client.patch(f"/api/files/{stored.pk}/", {"name": "x"}).status_code == 405


# --- isolation ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "suffix"),
    [("get", ""), ("delete", ""), ("get", "content/"), ("head", "content/")],
)
def test_another_users_file_is_404(bob_client, alice, make_file, media_root, method, suffix):
    stored = make_file(alice)

    response = getattr(bob_client, method)(f"/api/files/{stored.pk}/{suffix}")

    assert response.status_code == 404
    assert StoredFile.objects.filter(pk=stored.pk).exists()
    assert storages["default"].exists(stored.content.name)


def test_another_users_files_are_not_listed(bob_client, alice, make_file):
    make_file(alice)

    assert bob_client.get("/api/files/").json()["count"] == 0
