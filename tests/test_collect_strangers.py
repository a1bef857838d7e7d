"""What a stranger holding an upload request's link cannot do to its owner,
through Django's test client: send requests past REQUEST_RATE_LIMIT (429
with Retry-After, the page and the tus endpoints counted together, the
owner's own API not at all), hold more unfinished uploads than a request
or an owner takes at once (429 naming the limit, nothing half made), keep
an upload that never gets a byte for more than REQUEST_UPLOAD_START_TIMEOUT,
or take the owner's last bytes through a request without a byte limit.
The same limits under racing uploaders are in test_collect_strangers_race.py,
under a flood against gunicorn in test_collect_flood.py."""

from datetime import timedelta
from urllib.parse import urlparse

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone
from freezegun import freeze_time
from rest_framework.test import APIClient

from collect.models import ReceivedFile, UploadRequest
from sharing.models import SharingPolicy, StorageAccount, StoredFile
from tests.test_collect_api import endpoint, make_request
from tests.test_hardening_logins import counters_out_of_reach  # noqa: F401 (a fixture)
from tests.test_hardening_settings import manage
from tests.test_uploads_support import TUS, create, head, metadata, patch, path_of
from uploads.models import Upload, partial_dir, remove_if_due

pytestmark = pytest.mark.django_db


def stranger(address: str = "203.0.113.7") -> APIClient:
    return APIClient(REMOTE_ADDR=address)


def start(client, made: dict, length: int = 10):
    return create(client, length, metadata(filename="part.bin"), endpoint=endpoint(made))


def set_default_quota(size: int | None) -> None:
    SharingPolicy.objects.update_or_create(pk=SharingPolicy.SINGLETON_ID, defaults={"default_quota_bytes": size})


def account(user) -> StorageAccount:
    return StorageAccount.objects.get(pk=user.pk)


# --- the rate --------------------------------------------------------------------------


def test_an_address_past_the_request_rate_gets_429_with_retry_after_on_the_page_and_the_tus_endpoints(
    settings, alice_client
):
    settings.REQUEST_RATE_LIMIT = 4
    made = make_request(alice_client)
    page = urlparse(made["url"]).path
    client = stranger()
    path = path_of(start(client, made))  # 1
    assert client.get(page).status_code == 200  # 2
    assert head(client, path).status_code == 200  # 3
    assert patch(client, path, 0, b"01234").status_code == 204  # 4
    refused = [
        patch(client, path, 5, b"56789"),
        head(client, path),
        start(client, made),
        client.delete(path, **TUS),
        client.options(endpoint(made)),
        client.get(page),
        client.get(page, HTTP_ACCEPT="text/html"),
        client.post(page, {"password": "guess"}),
    ]
    assert [response.status_code for response in refused] == [429] * len(refused)
    assert all(1 <= int(response["Retry-After"]) <= 66 for response in refused)  # the window and a bucket
    assert "Too many requests from your address" in refused[0].json()["detail"]
    assert "Too many requests from your address" in refused[-2].content.decode()  # the page, for a browser
    # Nothing a refused request asked for was done.
    assert (Upload.objects.get().offset, Upload.objects.count()) == (5, 1)


def test_the_request_rate_is_counted_per_address_and_not_on_the_owners_api(settings, alice_client):
    settings.REQUEST_RATE_LIMIT = 2
    made = make_request(alice_client)
    first = stranger()
    assert [start(first, made).status_code for _ in range(3)] == [201, 201, 429]
    assert start(stranger("198.51.100.2"), made).status_code == 201
    # The owner's own uploads and API, from anywhere, are not this limit's.
    assert create(alice_client, 10, REMOTE_ADDR="203.0.113.7").status_code == 201
    assert alice_client.get(f"/api/upload-requests/{made['id']}/", REMOTE_ADDR="203.0.113.7").status_code == 200


def test_unknown_tokens_count_too(settings):
    settings.REQUEST_RATE_LIMIT = 2
    client = stranger()
    guesses = [client.get(f"/r/{'A' * 21}{n}/") for n in range(3)]
    assert [response.status_code for response in guesses] == [404, 404, 429]


def test_counters_out_of_reach_leave_upload_requests_working_and_their_other_limits_on(
    settings,
    alice_client,
    counters_out_of_reach,  # noqa: F811 (the fixture imported above)
):
    settings.REQUEST_RATE_LIMIT = 1  # it only spreads load: not worth refusing everyone for
    settings.REQUEST_UNFINISHED_UPLOADS = 1  # in the database: the counters are not asked
    made = make_request(alice_client)
    assert stranger().get(urlparse(made["url"]).path).status_code == 200
    assert start(stranger(), made).status_code == 201
    assert start(stranger(), made).status_code == 429


@pytest.mark.parametrize(
    "name",
    [
        "REQUEST_RATE_LIMIT",
        "REQUEST_UNFINISHED_UPLOADS",
        "REQUEST_UNFINISHED_UPLOADS_PER_OWNER",
        "REQUEST_UPLOAD_START_TIMEOUT",
    ],
)
def test_a_request_limit_that_allows_nothing_stops_start_up_naming_the_variable(name):
    result = manage("check", SECRET_KEY="k" * 50, **{name: "0"})
    assert result.returncode != 0
    assert f"ImproperlyConfigured: {name} must be at least 1" in result.stderr


# --- unfinished uploads per request and per owner ------------------------------------


def test_a_request_takes_its_most_unfinished_uploads_then_429_naming_the_limit(settings, alice, alice_client):
    settings.REQUEST_UNFINISHED_UPLOADS = 3
    made = make_request(alice_client)
    paths = [path_of(start(stranger(), made)) for _ in range(3)]
    refused = start(stranger(), made)
    assert refused.status_code == 429
    assert refused.json()["detail"] == (
        "This upload request already has 3 unfinished uploads, the most it takes at once: "
        "finish or cancel one of them, or try again later."
    )
    assert "Retry-After" not in refused  # what is held, not a rate
    # Nothing of the refused one was made or kept.
    assert (Upload.objects.count(), ReceivedFile.objects.count()) == (3, 3)
    assert len(list(partial_dir().iterdir())) == 3
    assert UploadRequest.objects.get(pk=made["id"]).files_taken == 3
    assert (account(alice).reserved_bytes, account(alice).strangers_uploads) == (30, 3)

    # One finished and one cancelled: two places again.
    assert patch(stranger(), paths[0], 0, b"0123456789").status_code == 204
    assert stranger().delete(paths[1], **TUS).status_code == 204
    assert [start(stranger(), made).status_code for _ in range(3)] == [201, 201, 429]


def test_a_file_posted_by_the_page_needs_no_unfinished_place(settings, alice_client):
    settings.REQUEST_UNFINISHED_UPLOADS = 1
    made = make_request(alice_client)
    assert start(stranger(), made).status_code == 201
    assert start(stranger(), made).status_code == 429
    posted = stranger().post(
        urlparse(made["url"]).path, {"files": SimpleUploadedFile("note.txt", b"hello")}, format="multipart"
    )
    assert posted.status_code == 303
    assert StoredFile.objects.get().name == "note.txt"


def test_an_owner_takes_its_most_unfinished_uploads_from_strangers_across_requests(settings, alice, alice_client):
    settings.REQUEST_UNFINISHED_UPLOADS_PER_OWNER = 3
    one, other = make_request(alice_client), make_request(alice_client, max_bytes=1000)
    assert [start(stranger(), one).status_code for _ in range(2)] == [201, 201]
    assert start(stranger(), other).status_code == 201
    refused = start(stranger(), other)
    assert refused.status_code == 429
    assert refused.json()["detail"] == (
        "The owner of this upload request already has 3 unfinished uploads through their upload requests, "
        "the most they take at once: try again later."
    )
    assert (Upload.objects.count(), ReceivedFile.objects.count()) == (3, 3)
    assert UploadRequest.objects.get(pk=other["id"]).files_taken == 1  # the refused one's place went back
    assert len(list(partial_dir().iterdir())) == 3
    # The owner's own uploads are not strangers'.
    assert create(alice_client, 10).status_code == 201
    assert account(alice).strangers_uploads == 3


def test_closing_a_request_gives_the_owner_its_strangers_places_back(settings, alice, alice_client):
    settings.REQUEST_UNFINISHED_UPLOADS_PER_OWNER = 2
    one, other = make_request(alice_client), make_request(alice_client)
    start(stranger(), one)
    start(stranger(), one)
    assert start(stranger(), other).status_code == 429
    assert alice_client.post(f"/api/upload-requests/{one['id']}/close/").status_code == 200
    assert account(alice).strangers_uploads == 0
    assert start(stranger(), other).status_code == 201


# --- the first deadline ---------------------------------------------------------------


def test_an_upload_that_gets_no_bytes_goes_after_the_start_timeout_with_its_place_and_space(
    settings, alice, alice_client
):
    settings.REQUEST_UPLOAD_START_TIMEOUT = 600
    made = make_request(alice_client, expires_in=86400)
    before = timezone.now()
    start(stranger(), made, 1000)
    after = timezone.now()
    upload = Upload.objects.get()
    assert before + timedelta(seconds=600) <= upload.expires_at <= after + timedelta(seconds=600)
    assert account(alice).reserved_bytes == 1000
    with freeze_time(upload.expires_at + timedelta(milliseconds=1)):
        assert Upload.objects.due(timezone.now()).get() == upload
        assert remove_if_due(upload.pk) is True
    assert not Upload.objects.exists()
    assert (account(alice).reserved_bytes, account(alice).strangers_uploads) == (0, 0)
    assert UploadRequest.objects.get(pk=made["id"]).files_taken == 0


def test_the_first_bytes_renew_an_upload_as_any_chunk_does(settings, alice_client):
    settings.REQUEST_UPLOAD_START_TIMEOUT = 600
    made = make_request(alice_client, expires_in=86400)
    path = path_of(start(stranger(), made, 1000))
    assert Upload.objects.get().expires_at <= timezone.now() + timedelta(seconds=600)
    assert patch(stranger(), path, 0, b"x").status_code == 204
    upload = Upload.objects.get()
    assert upload.expires_at >= timezone.now() + timedelta(seconds=settings.UPLOAD_EXPIRES_AFTER - 60)
    assert not Upload.objects.due(timezone.now() + timedelta(seconds=601)).exists()


# --- the owner's space ------------------------------------------------------------------


@pytest.mark.parametrize("own_quota", [False, True], ids=["policy-quota", "own-quota"])
def test_strangers_through_a_request_without_a_byte_limit_leave_the_owner_half(own_quota, alice, alice_client):
    if own_quota:
        set_default_quota(10)
        StorageAccount.objects.create(user=alice, quota_bytes=100)
    else:
        set_default_quota(100)
    made = make_request(alice_client)
    assert [start(stranger(), made, 20).status_code for _ in range(2)] == [201, 201]
    refused = start(stranger(), made, 20)  # 60 of 100: more than half
    assert refused.status_code == 413
    assert "10\xa0bytes of your 100\xa0bytes are free" in refused.json()["detail"]
    assert start(stranger(), made, 10).status_code == 201  # exactly half
    assert start(stranger(), made, 1).status_code == 413
    assert (account(alice).reserved_bytes, account(alice).strangers_reserved_bytes) == (50, 50)
    # The owner's half is the owner's.
    assert create(alice_client, 50).status_code == 201
    assert create(alice_client, 1).status_code == 413


def test_the_owners_files_and_own_uploads_shrink_what_strangers_may_hold(alice, alice_client, make_file):
    set_default_quota(100)
    make_file(alice, data=b"x" * 40)
    assert create(alice_client, 20).status_code == 201
    made = make_request(alice_client)
    assert start(stranger(), made, 21).status_code == 413  # half of the 40 left
    assert start(stranger(), made, 20).status_code == 201


def test_a_request_with_a_byte_limit_may_take_the_owners_last_bytes(alice, alice_client):
    set_default_quota(100)
    made = make_request(alice_client, max_bytes=100)
    assert [start(stranger(), made, 50).status_code for _ in range(2)] == [201, 201]
    assert (account(alice).reserved_bytes, account(alice).strangers_reserved_bytes) == (100, 0)
    assert create(alice_client, 1).status_code == 413  # as the owner allowed


def test_a_strangers_reservation_goes_back_when_its_file_arrives_or_its_upload_goes(alice, alice_client):
    set_default_quota(100)
    made = make_request(alice_client)
    arriving = path_of(start(stranger(), made, 10))
    cancelled = path_of(start(stranger(), made, 20))
    assert (account(alice).strangers_reserved_bytes, account(alice).strangers_uploads) == (30, 2)
    assert patch(stranger(), arriving, 0, b"0123456789").status_code == 204
    assert stranger().delete(cancelled, **TUS).status_code == 204
    after = account(alice)
    assert (after.used_bytes, after.reserved_bytes, after.strangers_reserved_bytes, after.strangers_uploads) == (
        10,
        0,
        0,
        0,
    )
    # The file that arrived is the owner's like any other; strangers get half of the 90 left.
    assert start(stranger(), made, 46).status_code == 413
    assert start(stranger(), made, 45).status_code == 201
