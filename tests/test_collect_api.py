"""Upload requests through the API and their tus endpoints, with the test
client on the real database: creating, uploading through the link, the
limits, the password, the deadline, closing and deleting."""

from datetime import timedelta
from urllib.parse import urlparse

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from collect.ending import end_if_due
from collect.models import ReceivedFile, UploadRequest
from sharing.models import SharingPolicy, StorageAccount, StoredFile
from tests.test_uploads_support import OFFSET_STREAM, TUS, create, head, metadata, patch, path_of
from uploads.models import Upload, partial_path

pytestmark = pytest.mark.django_db(transaction=True)


def make_request(client, **fields) -> dict:
    response = client.post("/api/upload-requests/", {"expires_in": 3600, **fields}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def endpoint(made: dict) -> str:
    return urlparse(made["url"]).path + "uploads/"


def send_file(client, made: dict, data: bytes, name: str = "photo.jpg"):
    """One whole file through the request's tus endpoint: create, then one PATCH."""
    response = create(client, len(data), metadata(filename=name), endpoint=endpoint(made))
    if response.status_code != 201:
        return response
    return patch(client, path_of(response), 0, data)


def test_a_file_sent_through_the_link_becomes_the_owners_and_is_listed(alice, alice_client):
    made = make_request(alice_client, title="Holiday photos", note="The ones from the lake, please.")
    assert made["state"] == "open"
    assert made["files"] == []
    assert made["url"].startswith("http://testserver/r/")
    assert send_file(APIClient(), made, b"x" * 1000).status_code == 204
    stored = StoredFile.objects.get(owner=alice)
    assert (stored.name, stored.size) == ("photo.jpg", 1000)
    shown = alice_client.get(f"/api/upload-requests/{made['id']}/").json()
    assert [(f["name"], f["size"], f["state"], f["file"]) for f in shown["files"]] == [
        ("photo.jpg", 1000, "arrived", stored.pk)
    ]
    assert (shown["files_taken"], shown["bytes_taken"]) == (1, 1000)
    assert StorageAccount.objects.get(user=alice).used_bytes == 1000


def test_an_unfinished_upload_shows_as_arriving_and_its_tus_answers_hide_the_owners_api(alice_client):
    made = make_request(alice_client)
    response = create(APIClient(), 10, metadata(filename="a.txt"), endpoint=endpoint(made))
    assert response.status_code == 201
    assert urlparse(response["Location"]).path.startswith(urlparse(made["url"]).path + "uploads/")
    files = alice_client.get(f"/api/upload-requests/{made['id']}/").json()["files"]
    assert [(f["state"], f["file"]) for f in files] == [("arriving", None)]
    done = patch(APIClient(), path_of(response), 0, b"0123456789")
    assert done.status_code == 204
    assert "Upload-File" not in done


def test_the_file_limit_refuses_the_next_upload_with_a_413_naming_it(alice_client):
    made = make_request(alice_client, max_files=1)
    assert send_file(APIClient(), made, b"one").status_code == 204
    refused = send_file(APIClient(), made, b"two")
    assert refused.status_code == 413
    assert "accepts 1 file" in refused.json()["detail"]
    assert StoredFile.objects.count() == 1


def test_the_byte_limit_counts_what_was_started_and_names_the_room_left(alice_client):
    made = make_request(alice_client, max_bytes=100)
    first = create(APIClient(), 60, metadata(filename="a.bin"), endpoint=endpoint(made))
    assert first.status_code == 201
    refused = create(APIClient(), 50, metadata(filename="b.bin"), endpoint=endpoint(made))
    assert refused.status_code == 413
    assert "40" in refused.json()["detail"]
    assert create(APIClient(), 40, metadata(filename="c.bin"), endpoint=endpoint(made)).status_code == 201


def test_terminating_an_unfinished_upload_gives_its_place_back(alice_client):
    made = make_request(alice_client, max_files=1)
    response = create(APIClient(), 10, metadata(filename="a.txt"), endpoint=endpoint(made))
    assert create(APIClient(), 10, metadata(filename="b.txt"), endpoint=endpoint(made)).status_code == 413
    assert APIClient().delete(path_of(response), **TUS).status_code == 204
    assert ReceivedFile.objects.count() == 0
    assert send_file(APIClient(), made, b"b" * 10).status_code == 204


def test_a_password_request_refuses_uploads_until_its_page_was_unlocked(alice_client):
    made = make_request(alice_client, password="open sesame")
    assert made["has_password"] is True
    assert "password" not in made
    uploader = APIClient()
    refused = create(uploader, 3, metadata(filename="a.txt"), endpoint=endpoint(made))
    assert refused.status_code == 403
    assert "password" in refused.json()["detail"]
    page = urlparse(made["url"]).path
    assert uploader.post(page, {"password": "wrong"}).status_code == 403
    assert uploader.post(page, {"password": "open sesame"}).status_code == 303
    assert send_file(uploader, made, b"abc").status_code == 204


def test_uploads_of_one_request_are_not_reachable_through_another(alice_client):
    first, second = make_request(alice_client), make_request(alice_client)
    response = create(APIClient(), 3, metadata(filename="a.txt"), endpoint=endpoint(first))
    elsewhere = endpoint(second) + path_of(response).rsplit("/", 1)[1]
    assert head(APIClient(), elsewhere).status_code == 404
    assert head(APIClient(), path_of(response)).status_code == 200
    # Nor through the owner's API, which shows the owner's own uploads only...
    # ...but the owner's API cannot reach a request's upload by its id either way.
    assert Upload.objects.get().owner_id == UploadRequest.objects.get(pk=first["id"]).owner_id


def test_no_upload_starts_at_or_after_the_deadline_even_with_the_daemon_down(alice_client):
    made = make_request(alice_client)
    UploadRequest.objects.filter(pk=made["id"]).update(expires_at=timezone.now())
    refused = create(APIClient(), 3, metadata(filename="a.txt"), endpoint=endpoint(made))
    assert refused.status_code == 410
    assert "ended" in refused.json()["detail"]
    assert APIClient().get(urlparse(made["url"]).path).status_code == 410


def test_an_upload_in_progress_is_refused_at_its_next_chunk_after_the_deadline_and_removed(alice, alice_client):
    made = make_request(alice_client)
    response = create(APIClient(), 10, metadata(filename="a.txt"), endpoint=endpoint(made))
    path = path_of(response)
    assert patch(APIClient(), path, 0, b"01234").status_code == 204
    upload = Upload.objects.get()
    assert upload.ends_by == UploadRequest.objects.get(pk=made["id"]).expires_at >= upload.expires_at
    # The deadline passes (moved to now: the same as waiting for it).
    past = timezone.now() - timedelta(milliseconds=1)
    UploadRequest.objects.filter(pk=made["id"]).update(expires_at=past)
    Upload.objects.filter(pk=upload.pk).update(expires_at=past, ends_by=past)
    assert patch(APIClient(), path, 5, b"56789").status_code == 410
    assert end_if_due(made["id"]) is True
    assert not Upload.objects.exists()
    assert not partial_path(upload.pk).exists()
    assert StoredFile.objects.count() == 0
    assert StorageAccount.objects.get(user=alice).reserved_bytes == 0
    ended = alice_client.get(f"/api/upload-requests/{made['id']}/").json()
    assert (ended["state"], ended["end_reason"], ended["files"]) == ("ended", "expired", [])


def test_a_chunk_cannot_renew_an_upload_past_its_requests_deadline(alice_client):
    made = make_request(alice_client, expires_in=60)
    response = create(APIClient(), 10, metadata(filename="a.txt"), endpoint=endpoint(made))
    assert patch(APIClient(), path_of(response), 0, b"01234").status_code == 204
    upload = Upload.objects.get()
    assert upload.expires_at == upload.ends_by


def test_closing_ends_the_request_removes_its_unfinished_uploads_and_keeps_what_arrived(alice, alice_client):
    made = make_request(alice_client)
    assert send_file(APIClient(), made, b"kept").status_code == 204
    going = create(APIClient(), 10, metadata(filename="b.txt"), endpoint=endpoint(made))
    closed = alice_client.post(f"/api/upload-requests/{made['id']}/close/")
    assert closed.status_code == 200
    body = closed.json()
    assert (body["state"], body["end_reason"]) == ("ended", "closed")
    assert [f["name"] for f in body["files"]] == ["photo.jpg"]
    refused = patch(APIClient(), path_of(going), 0, b"0123456789")
    assert refused.status_code == 410
    assert "ended" in refused.json()["detail"]
    assert not Upload.objects.exists()
    assert StoredFile.objects.filter(owner=alice).count() == 1
    assert end_if_due(made["id"]) is False  # the daemon finds nothing left to end


def test_deleting_a_request_keeps_the_files_that_arrived(alice, alice_client):
    made = make_request(alice_client)
    assert send_file(APIClient(), made, b"kept").status_code == 204
    assert alice_client.delete(f"/api/upload-requests/{made['id']}/").status_code == 204
    assert not UploadRequest.objects.exists()
    assert StoredFile.objects.filter(owner=alice).count() == 1
    assert APIClient().get(urlparse(made["url"]).path).status_code == 404


def test_owners_see_only_their_own_requests(alice_client, bob_client):
    made = make_request(alice_client)
    assert bob_client.get(f"/api/upload-requests/{made['id']}/").status_code == 404
    assert bob_client.get("/api/upload-requests/").json()["results"] == []


def test_the_list_filters_by_state_and_names_a_bad_one(alice_client):
    open_one, closed_one = make_request(alice_client), make_request(alice_client)
    alice_client.post(f"/api/upload-requests/{closed_one['id']}/close/")

    def ids(state):
        return [r["id"] for r in alice_client.get(f"/api/upload-requests/?state={state}").json()["results"]]

    assert ids("open") == [open_one["id"]]
    assert ids("ended") == [closed_one["id"]]
    bad = alice_client.get("/api/upload-requests/?state=sideways")
    assert bad.status_code == 400
    assert "state" in bad.json()


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"max_files": 0}, "max_files"),
        ({"max_bytes": -1}, "max_bytes"),
        ({"note": "x" * 1001}, "note"),
        ({"expires_in": 0}, "expires_in"),
        ({"expires_at": "2020-01-01T00:00:00Z"}, "expires_at"),
        ({"password": 1234}, "password"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(alice_client, fields, field):
    given = fields if field == "expires_at" else {"expires_in": 60, **fields}
    response = alice_client.post("/api/upload-requests/", given, format="json")
    assert response.status_code == 400
    assert field in response.json()


def test_patch_changes_the_words_and_the_password_but_not_the_deadline(alice_client):
    made = make_request(alice_client, password="one")
    changed = alice_client.patch(
        f"/api/upload-requests/{made['id']}/", {"title": "New", "password": "", "expires_in": 5}, format="json"
    )
    assert changed.status_code == 200
    body = changed.json()
    assert (body["title"], body["has_password"], body["expires_at"]) == ("New", False, made["expires_at"])


def test_the_quota_of_the_owner_counts_uploads_through_requests(alice, alice_client):
    SharingPolicy.objects.update_or_create(pk=SharingPolicy.SINGLETON_ID, defaults={"default_quota_bytes": 100})
    made = make_request(alice_client)
    refused = create(APIClient(), 101, metadata(filename="big.bin"), endpoint=endpoint(made))
    assert refused.status_code == 413
    assert ReceivedFile.objects.count() == 0
    assert UploadRequest.objects.get().files_taken == 0


def test_a_body_sent_with_the_creation_is_stored_too(alice_client):
    made = make_request(alice_client)
    response = APIClient().generic(
        "POST",
        endpoint(made),
        b"hello",
        content_type=OFFSET_STREAM,
        **TUS,
        HTTP_UPLOAD_LENGTH="5",
        HTTP_UPLOAD_METADATA=metadata(filename="h.txt"),
    )
    assert response.status_code == 201
    assert response["Upload-Offset"] == "5"
    assert StoredFile.objects.get().name == "h.txt"


def test_a_lifetime_past_the_policys_maximum_is_a_400_naming_it(alice_client):
    response = alice_client.post("/api/upload-requests/", {"expires_in": 86400000000000}, format="json")
    assert response.status_code == 400
    assert "expires_in" in response.json()


def test_a_request_past_its_deadline_reads_ended_at_it_before_the_daemon_stamps_it(alice_client):
    made = make_request(alice_client)
    deadline = timezone.now() - timedelta(seconds=1)
    UploadRequest.objects.filter(pk=made["id"]).update(expires_at=deadline)
    shown = alice_client.get(f"/api/upload-requests/{made['id']}/").json()
    assert (shown["state"], shown["end_reason"]) == ("ended", "expired")
    assert shown["ended_at"] == shown["expires_at"]
    assert UploadRequest.objects.get(pk=made["id"]).ended_at is None  # the clock decided, not a write
