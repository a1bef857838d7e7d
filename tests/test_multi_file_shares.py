"""Shares of several files: made through the API, listed on the link's page,
sent file by file or as one zip (checked by Python's zipfile), with one byte
budget, one deadline and one history for the whole share. Over real HTTP,
with curl and racing clients: tests/test_multi_file_http.py."""

import hashlib
import io
import zipfile
import zlib
from datetime import UTC, datetime, timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.template.defaultfilters import filesizeformat
from django.test import Client
from django.utils import timezone
from freezegun import freeze_time

from notices.mail import notify_first_download
from sharing.models import Share, ShareEvent, StoredFile, delete_file
from sharing.models.budget import byte_budget
from webhooks.payloads import payload

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("either_storage")]

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
CONTENTS = {
    "notes.txt": b"three lines\nof plain\ntext\n",
    "photo.png": bytes(range(256)) * 40,
    "Zürich report.pdf": b"%PDF-1.4 not really a pdf, but bytes all the same\n" * 300,
}


@pytest.fixture
def client():
    return Client(enforce_csrf_checks=True)


@pytest.fixture
def three(alice, make_file) -> list[StoredFile]:
    types = {"notes.txt": "text/plain", "photo.png": "image/png", "Zürich report.pdf": "application/pdf"}
    return [make_file(alice, name, data, types[name]) for name, data in CONTENTS.items()]


def share_of(files, lifetime=timedelta(hours=1), **options) -> Share:
    return Share.create_for(files=files, expires_at=timezone.now() + lifetime, **options)


def body(response) -> bytes:
    """The whole body; the test client closes a streamed response read to its
    end, which settles its reservation, as the server does."""
    return b"".join(response.streaming_content) if response.streaming else response.content


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- the API ----------------------------------------------------------------------


def test_the_api_shares_several_files_behind_one_link(alice_client, three):
    ids = [stored.pk for stored in three]

    response = alice_client.post("/api/shares/", {"files": ids, "expires_in": 3600}, format="json")

    assert response.status_code == 201, response.json()
    made = response.json()
    assert (made["file"], made["files"], made["size"]) == (ids[0], ids, sum(len(d) for d in CONTENTS.values()))
    listed = alice_client.get("/api/shares/").json()["results"][0]
    assert (listed["files"], listed["size"]) == (ids, made["size"])
    assert alice_client.get(f"/api/shares/?file={ids[2]}").json()["count"] == 1


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"files": []}, "files", "Ensure this field has at least 1 elements."),
        ({"files": "1"}, "files", 'Expected a list of items but got type "str".'),
        ({}, "file", "Give file (one file id) or files (a list of file ids), not both or neither."),
    ],
)
def test_a_bad_list_of_files_is_a_400_naming_it(alice_client, three, body, field, message):
    response = alice_client.post("/api/shares/", {**body, "expires_in": 60}, format="json")

    assert response.status_code == 400
    assert response.json()[field] == [message]
    assert not Share.objects.exists()


def test_a_file_listed_twice_or_not_ones_own_is_refused(alice_client, bob, make_file, three):
    twice = alice_client.post("/api/shares/", {"files": [three[0].pk, three[0].pk], "expires_in": 60}, format="json")
    theirs = make_file(bob, "theirs.txt")
    mixed = alice_client.post("/api/shares/", {"files": [three[0].pk, theirs.pk], "expires_in": 60}, format="json")
    both = alice_client.post(
        "/api/shares/", {"file": three[0].pk, "files": [three[1].pk], "expires_in": 60}, format="json"
    )

    assert twice.status_code == mixed.status_code == both.status_code == 400
    assert twice.json() == {"files": ["A file is listed twice: give each file once."]}
    assert mixed.json() == {"files": [f'Item 2: Invalid pk "{theirs.pk}" - object does not exist.']}
    assert not Share.objects.exists()


# --- the recipient's page ----------------------------------------------------------


def test_the_page_lists_every_file_with_its_own_download_and_download_all(client, three):
    share = share_of(three)

    page = client.get(f"/s/{share.token}", HTTP_ACCEPT="text/html").content.decode()

    for position, stored in enumerate(three, start=1):
        assert stored.name in page
        assert f'href="/s/{share.token}/files/{position}"' in page
        assert f'data-bytes="{stored.size}"' in page
    zip_length = int(client.head(f"/s/{share.token}/all.zip")["Content-Length"])
    assert f'href="/s/{share.token}/all.zip"' in page
    assert f"Download all ({filesizeformat(zip_length)}, zip)" in page
    assert "notes.txt and 2 more files" in page


# --- each file, and the zip --------------------------------------------------------


def test_each_file_is_sent_whole_with_its_own_name_type_and_etag(client, three):
    share = share_of(three)

    for position, stored in enumerate(three, start=1):
        response = client.get(f"/s/{share.token}/files/{position}")
        assert response.status_code == 200
        assert body(response) == CONTENTS[stored.name]
        assert response["Content-Type"] == stored.content_type
        assert response["ETag"] == f'"{stored.sha256}"'
        assert response["Content-Disposition"].startswith("attachment;")
        assert response["Content-Security-Policy"] == "sandbox"
    assert client.get(f"/s/{share.token}/files/4").status_code == 404


def test_the_zip_holds_every_file_and_python_zipfile_checks_it(client, three):
    share = share_of(three)

    response = client.get(f"/s/{share.token}/all.zip")
    data = body(response)

    assert response.status_code == 200
    assert response["Content-Type"] == "application/zip"
    assert int(response["Content-Length"]) == len(data)
    archive = zipfile.ZipFile(io.BytesIO(data))
    assert archive.testzip() is None  # every member's CRC-32 matches its bytes
    assert [info.filename for info in archive.infolist()] == list(CONTENTS)
    for info in archive.infolist():
        assert info.compress_type == zipfile.ZIP_STORED
        assert sha256(archive.read(info)) == sha256(CONTENTS[info.filename])
    # A script's plain GET of a share of several files gets the same zip.
    assert body(Client().get(f"/s/{share.token}")) == data


def test_a_range_of_the_zip_is_that_stretch_of_it_and_if_range_guards_it(client, three):
    share = share_of(three)
    whole = body(client.get(f"/s/{share.token}/all.zip"))
    etag = client.head(f"/s/{share.token}/all.zip")["ETag"]

    ranged = client.get(f"/s/{share.token}/all.zip", HTTP_RANGE="bytes=100-5099", HTTP_IF_RANGE=etag)
    stale = client.get(f"/s/{share.token}/all.zip", HTTP_RANGE="bytes=100-5099", HTTP_IF_RANGE='"another"')

    assert ranged.status_code == 206
    assert ranged["Content-Range"] == f"bytes 100-5099/{len(whole)}"
    assert body(ranged) == whole[100:5100]
    assert stale.status_code == 200
    assert body(stale) == whole


def test_the_zip_etag_changes_when_a_file_leaves_the_share(client, three):
    share = share_of(three)
    before = client.head(f"/s/{share.token}/all.zip")["ETag"]

    delete_file(three[1])

    after = client.head(f"/s/{share.token}/all.zip")
    assert after.status_code == 200
    assert after["ETag"] != before
    names = zipfile.ZipFile(io.BytesIO(body(client.get(f"/s/{share.token}/all.zip")))).namelist()
    assert names == ["notes.txt", "Zürich report.pdf"]
    # The file's address is its place in the share: the third stays the third.
    assert body(client.get(f"/s/{share.token}/files/3")) == CONTENTS["Zürich report.pdf"]
    assert client.get(f"/s/{share.token}/files/2").status_code == 404


# --- one budget, one history ---------------------------------------------------------


def test_a_limit_counts_the_files_bytes_whether_sent_one_by_one_or_zipped(client, three):
    share = share_of(three, max_downloads=1)
    size = sum(len(data) for data in CONTENTS.values())
    assert share.budget == byte_budget(1, size)

    for position in (1, 2, 3):
        assert body(client.get(f"/s/{share.token}/files/{position}")) == list(CONTENTS.values())[position - 1]
    share.refresh_from_db()
    # One copy of each file went: the zip (another copy) no longer fits, nor
    # does either big file; what the resend allowance leaves still holds the
    # smallest file, so the link is not used up yet.
    assert share.bytes_left == share.budget - size
    refused = client.get(f"/s/{share.token}/all.zip")
    assert refused.status_code == 410
    # Said without bytes: a recipient counts downloads.
    assert refused.content.decode() == "What is left of this link's download limit does not cover what you asked for.\n"
    assert client.get(f"/s/{share.token}/files/3").status_code == 410
    assert share.status == Share.Status.ACTIVE
    again = 0
    while (response := client.get(f"/s/{share.token}/files/1")).status_code == 200:
        assert body(response) == CONTENTS["notes.txt"]
        again += 1
    share.refresh_from_db()
    assert again == (share.budget - size) // len(CONTENTS["notes.txt"])  # never a byte over the budget
    assert share.bytes_left < len(CONTENTS["notes.txt"])
    assert (share.status, share.end_reason) == (Share.Status.EXPIRED, Share.EndReason.DOWNLOAD_LIMIT)


def test_the_zip_draws_only_its_files_bytes_from_the_budget(client, three):
    share = share_of(three, max_downloads=1)
    size = sum(len(data) for data in CONTENTS.values())

    data = body(client.get(f"/s/{share.token}/all.zip"))

    share.refresh_from_db()
    assert len(data) > size  # headers...
    assert share.budget - share.bytes_left == size  # ...cost nothing
    assert share.downloads_left == 0
    assert client.get(f"/s/{share.token}/all.zip").status_code == 410


def test_the_history_records_which_file_or_the_zip(client, three):
    share = share_of(three)

    body(client.get(f"/s/{share.token}/files/2"))
    body(client.get(f"/s/{share.token}/all.zip"))
    body(client.get(f"/s/{share.token}/all.zip", HTTP_RANGE="bytes=10-"))

    events = ShareEvent.objects.filter(share=share).exclude(kind=ShareEvent.Kind.CREATED).order_by("id")
    downloads = [event for event in events if event.kind != ShareEvent.Kind.DELIVERED]
    assert [(event.kind, event.details) for event in downloads] == [
        (ShareEvent.Kind.DOWNLOADED, {"file": three[1].pk}),
        (ShareEvent.Kind.DOWNLOADED, {"zip": True}),
        (ShareEvent.Kind.RESUMED, {"zip": True}),
    ]
    # Each closed whole, its receipt measured against the file or the zip.
    receipts = [event.details for event in events if event.kind == ShareEvent.Kind.DELIVERED]
    assert [receipt["download"] for receipt in receipts] == [event.pk for event in downloads]
    assert all(receipt["whole"] for receipt in receipts)
    assert receipts[0]["size"] == three[1].size
    assert receipts[1]["size"] == receipts[2]["size"] > sum(stored.size for stored in three)  # the zip
    assert receipts[2]["from"] == 10


# --- the end, the same for every file and the zip -------------------------------------


def test_at_the_deadline_every_file_and_the_zip_refuse_alike(client, three):
    with freeze_time(T0) as clock:
        share = share_of(three, lifetime=timedelta(seconds=10))
        paths = [f"/s/{share.token}/files/{n}" for n in (1, 2, 3)] + [f"/s/{share.token}/all.zip", f"/s/{share.token}"]
        clock.tick(timedelta(seconds=10) - timedelta(microseconds=1))
        assert [client.get(path).status_code for path in paths] == [200] * 5
        clock.tick(timedelta(microseconds=1))
        assert [client.get(path).status_code for path in paths] == [410] * 5


def test_deleting_one_file_keeps_the_share_and_the_last_one_ends_it(three):
    share = share_of(three, max_downloads=2)

    assert delete_file(three[0]) == 0
    share.refresh_from_db()
    assert (share.status, share.file_ids, share.size) == (
        Share.Status.ACTIVE,
        [three[1].pk, three[2].pk],
        len(CONTENTS["photo.png"]) + len(CONTENTS["Zürich report.pdf"]),
    )
    delete_file(three[1])
    assert delete_file(three[2]) == 1
    share.refresh_from_db()
    assert (share.status, share.end_reason, share.files) == (Share.Status.UNSHARED, "file_deleted", [])


def test_an_ephemeral_file_goes_when_no_live_share_holds_it(alice, three, django_capture_on_commit_callbacks):
    upload = SimpleUploadedFile("once.txt", b"once\n", content_type="text/plain")
    ephemeral = StoredFile.create_from_upload(owner=alice, upload=upload, delete_when_unshared=True)
    first = share_of([three[0], ephemeral])
    second = share_of([ephemeral, three[1]])

    with django_capture_on_commit_callbacks(execute=True):
        first.unshare()
    assert StoredFile.objects.filter(pk=ephemeral.pk).exists()  # the second share still holds it
    with django_capture_on_commit_callbacks(execute=True):
        second.unshare()
    assert not StoredFile.objects.filter(pk=ephemeral.pk).exists()
    assert StoredFile.objects.filter(pk__in=[three[0].pk, three[1].pk]).count() == 2  # kept: not ephemeral


# --- previews -------------------------------------------------------------------------


def test_a_preview_is_shown_inline_sandboxed_and_counts_no_download(client, three):
    share = share_of(three)

    text = client.get(f"/s/{share.token}/files/1/preview")
    image = client.get(f"/s/{share.token}/files/2/preview")

    assert (text.status_code, image.status_code) == (200, 200)
    assert body(text) == CONTENTS["notes.txt"]
    assert text["Content-Type"] == "text/plain; charset=utf-8"
    assert image["Content-Type"] == "image/png"
    for response in (text, image):
        assert response["Content-Disposition"].startswith("inline;")
        assert response["Content-Security-Policy"] == "sandbox"
        assert response["X-Content-Type-Options"] == "nosniff"
    body(image)
    share.refresh_from_db()
    assert share.total_downloads == 0  # looking is not downloading...
    previewed = ShareEvent.objects.filter(share=share, kind=ShareEvent.Kind.PREVIEWED)
    assert sorted(event.details["file"] for event in previewed) == [three[0].pk, three[1].pk]  # ...but is recorded


def test_html_is_previewed_as_plain_text_and_unknown_types_not_at_all(client, alice, make_file):
    page = make_file(alice, "page.html", b"<script>alert(1)</script>", "text/html")
    binary = make_file(alice, "tool.exe", b"MZ\x90\x00", "application/octet-stream")
    share = share_of([page, binary])

    shown = client.get(f"/s/{share.token}/files/1/preview")

    assert shown["Content-Type"] == "text/plain; charset=utf-8"
    assert body(shown) == b"<script>alert(1)</script>"
    assert client.get(f"/s/{share.token}/files/2/preview").status_code == 404
    html = client.get(f"/s/{share.token}", HTTP_ACCEPT="text/html").content.decode()
    assert f'href="/s/{share.token}/files/1/preview"' in html
    assert f"/s/{share.token}/files/2/preview" not in html


def test_a_limited_link_shows_no_previews(client, three):
    share = share_of(three, max_downloads=1)

    assert client.get(f"/s/{share.token}/files/2/preview").status_code == 404
    assert "/preview" not in client.get(f"/s/{share.token}", HTTP_ACCEPT="text/html").content.decode()
    share.refresh_from_db()
    assert share.bytes_left == share.budget  # nothing was spent on looking


def test_the_page_shows_an_image_preview_and_media_players_that_load_nothing_until_played(client, alice, make_file):
    files = [
        make_file(alice, "a.png", CONTENTS["photo.png"], "image/png"),
        make_file(alice, "b.mp3", b"ID3" + bytes(100), "audio/mpeg"),
        make_file(alice, "c.webm", b"\x1aE\xdf\xa3" + bytes(100), "video/webm"),
    ]
    share = share_of(files)

    html = client.get(f"/s/{share.token}", HTTP_ACCEPT="text/html").content.decode()

    assert f'<img src="/s/{share.token}/files/1/preview" alt="Preview of a.png" loading="lazy">' in html
    assert f'<audio controls preload="none" src="/s/{share.token}/files/2/preview"' in html
    assert f'<video controls preload="none" src="/s/{share.token}/files/3/preview"' in html


def test_previews_refuse_from_the_deadline_on_like_downloads(client, three):
    with freeze_time(T0) as clock:
        share = share_of(three, lifetime=timedelta(seconds=5))
        clock.tick(timedelta(seconds=5))
        assert client.get(f"/s/{share.token}/files/2/preview").status_code == 410


# --- notices and webhooks say which ---------------------------------------------------


@pytest.mark.parametrize(("path", "said"), [("all.zip", "all its files, as one zip"), ("files/2", "photo.png")])
def test_the_first_download_notice_says_what_was_downloaded(client, three, mailoutbox, path, said):
    three[0].owner.email = "alice@example.com"
    three[0].owner.save()
    share = share_of(three, notify_first_download=True)

    body(client.get(f"/s/{share.token}/{path}"))
    assert notify_first_download(share.pk)

    assert f"What was downloaded: {said}." in mailoutbox[0].body


def test_a_webhook_payload_says_which_file_or_the_zip(client, three):
    share = share_of(three)

    body(client.get(f"/s/{share.token}/files/3"))
    body(client.get(f"/s/{share.token}/all.zip"))

    sent = [payload(event) for event in ShareEvent.objects.filter(share=share, kind="downloaded").order_by("id")]
    assert [(p["type"], p["data"]["details"]) for p in sent] == [
        ("share.downloaded", {"file": three[2].pk}),
        ("share.downloaded", {"zip": True}),
    ]


def test_a_file_without_a_crc_gets_one_computed_once_for_its_zip(client, three):
    StoredFile.objects.filter(pk=three[1].pk).update(crc32=None)  # as migrated while its bytes were missing
    share = share_of(three)

    archive = zipfile.ZipFile(io.BytesIO(body(client.get(f"/s/{share.token}/all.zip"))))

    assert archive.testzip() is None
    assert StoredFile.objects.get(pk=three[1].pk).crc32 == zlib.crc32(CONTENTS["photo.png"])


def test_a_zip_whose_file_lost_its_bytes_says_so_and_the_page_still_lists_them(client, three):
    three[2].content.storage.delete(three[2].content.name)
    StoredFile.objects.filter(pk=three[2].pk).update(crc32=None)
    share = share_of(three)

    refused = client.get(f"/s/{share.token}/all.zip")
    page = client.get(f"/s/{share.token}", HTTP_ACCEPT="text/html")

    assert refused.status_code == 410
    assert refused.content.decode() == "The shared file is no longer available.\n"
    assert page.status_code == 200
    assert "Download all (zip)" in page.content.decode()
