"""The tus 1.0 endpoints through Django's test client: discovery, creation,
offsets, appending, termination, and every refusal with its status and
message (tests/test_uploads_lifecycle.py: checksums, expiry, finishing)."""

import pytest
from django.core.files.storage import storages
from rest_framework.test import APIClient

from tests.helpers import stored_names
from tests.test_uploads_support import (
    OFFSET_STREAM,
    TUS,
    b64,
    create,
    head,
    metadata,
    new_upload,
    patch,
    path_of,
    upload_id,
)
from tokens.service import issue
from uploads.models import Upload, partial_dir, partial_object, partial_path

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("either_storage")]


def received(path: str) -> bytes:
    """The bytes an upload has kept so far (on the disk, or in a bucket:
    below one part, all in its tail)."""
    uid = upload_id(path)
    in_bucket = partial_object(uid)
    if in_bucket is None:
        return partial_path(uid).read_bytes()
    return in_bucket.read_tail(Upload.objects.get(pk=uid).offset)


def no_partial_bytes() -> bool:
    """No upload's bytes are left: no partial file, or nothing under the
    bucket's uploads/ and no unfinished multipart upload."""
    storage = storages["default"]
    if not hasattr(storage, "partial_object"):
        return not partial_dir().exists() or not any(partial_dir().iterdir())
    unfinished = storage.connection.meta.client.list_multipart_uploads(Bucket=storage.bucket_name)
    return stored_names("uploads") == [] and not unfinished.get("Uploads")


def test_options_describes_the_server(alice_client, settings):
    settings.MAX_UPLOAD_BYTES = 5000
    response = alice_client.options("/api/uploads/")  # no Tus-Resumable needed

    assert response.status_code == 204
    assert response["Tus-Resumable"] == "1.0.0"
    assert response["Tus-Version"] == "1.0.0"
    assert response["Tus-Extension"].split(",") == [
        "creation",
        "creation-with-upload",
        "expiration",
        "termination",
        "checksum",
    ]
    assert response["Tus-Max-Size"] == "5000"
    assert response["Tus-Checksum-Algorithm"] == "sha1,sha256,md5"


@pytest.mark.parametrize("method", ["post", "head", "patch", "delete", "options"])
def test_anonymous_requests_get_the_apis_401(method, alice_client):
    path = new_upload(alice_client, 10)
    target = "/api/uploads/" if method in ("post", "options") else path
    response = getattr(APIClient(), method)(target, **TUS)

    assert response.status_code == 401
    assert response["Tus-Resumable"] == "1.0.0"
    if method != "head":
        assert response.json() == {"detail": "Authentication credentials were not provided."}


def test_a_token_authenticates_like_the_rest_of_the_api(alice):
    client = APIClient()
    response = create(client, 10, HTTP_AUTHORIZATION=f"Bearer {issue(alice, name='test')[1]}")

    assert response.status_code == 201
    assert Upload.objects.get().owner == alice


@pytest.mark.parametrize("version", [None, "0.2.2", "1.0"])
def test_a_request_without_tus_1_0_0_gets_412_naming_the_version(version, alice_client):
    path = new_upload(alice_client, 10)
    extra = {} if version is None else {"HTTP_TUS_RESUMABLE": version}
    answers = [
        alice_client.post("/api/uploads/", HTTP_UPLOAD_LENGTH="10", **extra),
        alice_client.head(path, **extra),
        alice_client.generic("PATCH", path, b"x", content_type=OFFSET_STREAM, HTTP_UPLOAD_OFFSET="0", **extra),
        alice_client.delete(path, **extra),
    ]
    for response in answers:
        assert response.status_code == 412
        assert response["Tus-Version"] == "1.0.0"
        assert response["Tus-Resumable"] == "1.0.0"
    assert "speaks tus 1.0.0 only" in answers[0].json()["detail"]
    assert Upload.objects.count() == 1
    assert Upload.objects.get().offset == 0


def test_creation_answers_location_and_expiry_and_head_the_state(alice_client):
    meta = metadata(note="for Q3", filename="report.pdf", filetype="application/pdf", empty="")
    response = create(alice_client, 1234, meta)

    assert response.status_code == 201
    assert response["Location"].startswith("http://testserver/api/uploads/")
    assert response["Upload-Expires"].endswith(" GMT")
    assert response["Upload-Offset"] == "0"
    upload = Upload.objects.get()
    assert len(upload.pk) == 22
    assert (upload.filename, upload.content_type, upload.length) == ("report.pdf", "application/pdf", 1234)

    state = head(alice_client, path_of(response))
    assert state.status_code == 200
    assert state["Upload-Offset"] == "0"
    assert state["Upload-Length"] == "1234"
    assert state["Cache-Control"] == "no-store"
    assert state["Upload-Metadata"] == ",".join(sorted(meta.split(",")))  # the same pairs, in key order
    assert state["Upload-Expires"] == response["Upload-Expires"]
    assert state["Tus-Resumable"] == "1.0.0"
    assert "Upload-File" not in state


def test_the_partial_bytes_live_in_a_private_folder(alice_client, media_root, either_storage):
    if either_storage[0] == "bucket":
        pytest.skip("a bucket holds them: no folder (tests/test_object_storage_tus.py)")
    path = new_upload(alice_client, 10)

    assert partial_dir() == media_root / "uploads" / "partial"
    assert partial_dir().stat().st_mode & 0o777 == 0o700
    assert partial_path(upload_id(path)).stat().st_mode & 0o777 == 0o600
    assert alice_client.get(f"/media/uploads/partial/{upload_id(path)}").status_code == 404


def test_patches_append_at_the_offset(alice_client):
    path = new_upload(alice_client, 10, filename="a.txt")

    first = patch(alice_client, path, 0, b"0123")
    assert first.status_code == 204
    assert first["Upload-Offset"] == "4"
    assert first["Tus-Resumable"] == "1.0.0"
    assert head(alice_client, path)["Upload-Offset"] == "4"
    assert patch(alice_client, path, 4, b"").status_code == 204  # nothing to add, nothing changes
    assert patch(alice_client, path, 4, b"456").status_code == 204
    assert received(path) == b"0123456"


def test_a_patch_at_another_offset_is_409_and_changes_nothing(alice_client):
    path = new_upload(alice_client, 10)
    patch(alice_client, path, 0, b"0123")

    for offset in (0, 2, 5):
        response = patch(alice_client, path, offset, b"xx")
        assert response.status_code == 409
        assert response.json() == {"detail": f"Upload-Offset is {offset} but the upload is at 4: resume from there."}
    assert Upload.objects.get().offset == 4
    assert received(path) == b"0123"


@pytest.mark.parametrize(
    ("headers", "status", "detail"),
    [
        ({}, 400, "Upload-Length: is required (the file's size in bytes)."),
        ({"HTTP_UPLOAD_LENGTH": "ten"}, 400, "Upload-Length: must be a whole number of bytes, got 'ten'."),
        ({"HTTP_UPLOAD_LENGTH": "-5"}, 400, "Upload-Length: must be a whole number of bytes, got '-5'."),
        ({"HTTP_UPLOAD_DEFER_LENGTH": "1"}, 400, "Upload-Defer-Length: is not supported: send Upload-Length."),
        (
            {"HTTP_UPLOAD_LENGTH": "1001"},
            413,
            "The file is larger than the maximum upload size of 1000 bytes.",
        ),
        (
            {"HTTP_UPLOAD_LENGTH": "0", "HTTP_UPLOAD_METADATA": metadata(filename="empty.txt")},
            400,
            "empty.txt is empty (0 bytes): there is nothing to share.",
        ),
        (
            {"HTTP_UPLOAD_LENGTH": "5", "HTTP_UPLOAD_METADATA": "filename not*base64"},
            400,
            "Upload-Metadata: the value of 'filename' is not base64.",
        ),
        (
            {"HTTP_UPLOAD_LENGTH": "5", "HTTP_UPLOAD_METADATA": f"a {b64('x')},a {b64('y')}"},
            400,
            "Upload-Metadata: the key 'a' is given twice.",
        ),
        (
            {"HTTP_UPLOAD_LENGTH": "5", "HTTP_UPLOAD_METADATA": "filename /w=="},
            400,
            "Upload-Metadata: the value of 'filename' is not UTF-8 text.",
        ),
        (
            {"HTTP_UPLOAD_LENGTH": "5", "HTTP_UPLOAD_METADATA": "é eA=="},
            400,
            "Upload-Metadata: 'é' is not a key (printable ASCII, no space or comma).",
        ),
        (
            {"HTTP_UPLOAD_LENGTH": "5", "HTTP_UPLOAD_METADATA": metadata(delete_when_unshared="maybe")},
            400,
            "Upload-Metadata: delete_when_unshared must be true or false.",
        ),
    ],
)
def test_creation_refusals_name_the_header(headers, status, detail, alice_client, settings):
    settings.MAX_UPLOAD_BYTES = 1000
    response = alice_client.post("/api/uploads/", **TUS, **headers)

    assert response.status_code == status
    assert response.json() == {"detail": detail}
    assert response["Tus-Resumable"] == "1.0.0"
    assert Upload.objects.count() == 0
    assert no_partial_bytes()


def test_a_malformed_filetype_is_refused_with_check_uploads_message(alice_client):
    response = create(alice_client, 5, metadata(filetype="not a type"))

    assert response.status_code == 400
    assert response.json()["detail"].startswith("Upload-Metadata filetype: The file's Content-Type 'not a type'")


def test_an_empty_metadata_header_is_no_metadata(alice_client):
    """tuspy sends `Upload-Metadata: ` (empty) when it has none."""
    response = create(alice_client, 5, "")

    assert response.status_code == 201
    assert Upload.objects.get().filename == "file"
    assert "Upload-Metadata" not in head(alice_client, path_of(response))


@pytest.mark.parametrize(
    ("content_type", "headers", "body", "status", "detail"),
    [
        ("application/json", {}, b"{}", 415, "Content-Type must be application/offset+octet-stream, got"),
        (OFFSET_STREAM, {"HTTP_UPLOAD_OFFSET": "x"}, b"ab", 400, "Upload-Offset: must be a whole number"),
        (OFFSET_STREAM, {"HTTP_UPLOAD_OFFSET": None}, b"ab", 400, "Upload-Offset: is required"),
        (OFFSET_STREAM, {}, b"0123456789A", 413, "11 bytes at offset 0 would go past the upload's Upload-Length"),
        (OFFSET_STREAM, {"HTTP_TRANSFER_ENCODING": "chunked"}, b"ab", 411, "Send the chunk with a Content-Length"),
        (OFFSET_STREAM, {"CONTENT_LENGTH": "1e3"}, b"ab", 400, "Content-Length: must be a whole number"),
    ],
)
def test_patch_refusals(content_type, headers, body, status, detail, alice_client):
    path = new_upload(alice_client, 10)
    extra = {**TUS, "HTTP_UPLOAD_OFFSET": "0", **headers}
    extra = {key: value for key, value in extra.items() if value is not None}
    response = alice_client.generic("PATCH", path, body, content_type=content_type, **extra)

    assert response.status_code == status
    assert response.json()["detail"].startswith(detail)
    assert Upload.objects.get().offset == 0


def test_a_chunk_above_the_chunk_limit_is_refused_unread(alice_client, settings):
    settings.TUS_MAX_CHUNK_BYTES = 4
    path = new_upload(alice_client, 10)

    response = patch(alice_client, path, 0, b"01234")
    assert response.status_code == 413
    assert response.json() == {
        "detail": "The chunk is larger than the server accepts in one request (4 bytes): send smaller chunks."
    }
    assert response["Connection"] == "close"
    assert patch(alice_client, path, 0, b"0123").status_code == 204

    with_body = create(alice_client, 10, body=b"01234")
    assert with_body.status_code == 413
    assert Upload.objects.count() == 1


def test_the_chunk_limit_sits_below_the_body_limit_of_the_middleware(settings):
    """UploadLimitMiddleware refuses bodies over MAX_UPLOAD_BYTES (+ room for
    multipart): a default chunk passes it and meets the chunk rule."""
    assert settings.TUS_MAX_CHUNK_BYTES == 64 * 1024**2 < settings.MAX_UPLOAD_BYTES


def test_creation_with_upload_takes_the_first_bytes(alice_client):
    response = create(alice_client, 10, metadata(filename="a.bin"), body=b"01234")

    assert response.status_code == 201
    assert response["Upload-Offset"] == "5"
    assert "Upload-File" not in response
    assert Upload.objects.get().offset == 5
    assert patch(alice_client, path_of(response), 5, b"56789").status_code == 204


def test_creation_with_a_body_of_another_type_is_415(alice_client):
    response = alice_client.generic(
        "POST", "/api/uploads/", b"abc", content_type="text/plain", **TUS, HTTP_UPLOAD_LENGTH="3"
    )

    assert response.status_code == 415
    assert Upload.objects.count() == 0


def test_someone_elses_upload_is_404_like_a_missing_one(alice_client, bob_client):
    path = new_upload(alice_client, 10)
    patch(alice_client, path, 0, b"01")
    missing = "/api/uploads/" + "A" * 22

    for client, target in ((bob_client, path), (alice_client, missing)):
        assert head(client, target).status_code == 404
        response = patch(client, target, 2, b"23")
        assert response.status_code == 404
        assert response.json() == {"detail": "No such upload among yours."}
        assert client.delete(target, **TUS).status_code == 404
    assert Upload.objects.get().offset == 2
    assert received(path) == b"01"


def test_termination_removes_the_row_and_the_bytes(alice_client, django_capture_on_commit_callbacks):
    path = new_upload(alice_client, 10)
    patch(alice_client, path, 0, b"01")

    with django_capture_on_commit_callbacks(execute=True):
        response = alice_client.delete(path, **TUS)
    assert response.status_code == 204
    assert response["Tus-Resumable"] == "1.0.0"
    assert not Upload.objects.exists()
    assert no_partial_bytes()
    assert head(alice_client, path).status_code == 404
    assert patch(alice_client, path, 2, b"23").status_code == 404


def test_other_methods_are_405(alice_client):
    path = new_upload(alice_client, 10)

    assert alice_client.get(path, **TUS).status_code == 405
    assert alice_client.put(path, b"x", content_type=OFFSET_STREAM, **TUS).status_code == 405
    assert alice_client.get("/api/uploads/", **TUS).status_code == 405
