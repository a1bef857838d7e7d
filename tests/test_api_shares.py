"""/api/shares/: create, list, show, renew and unshare your own shares."""

from datetime import UTC, datetime, timedelta

import pytest
from freezegun import freeze_time

from sharing.models import Share, SharingPolicy, delete_file, expire_overdue, expire_shares
from tests.helpers import SHARE_FIELDS

pytestmark = pytest.mark.django_db

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
BAD_EXPIRES_IN = ["abc", 1.5, "1.5", 0, "0", -3, True, False, None, "", [60], {"s": 60}]


@pytest.fixture
def clock():
    with freeze_time(T0) as frozen:
        yield frozen


@pytest.fixture
def alice_file(alice, make_file):
    return make_file(alice)


def iso(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


def create(client, **body):
    return client.post("/api/shares/", body, format="json")


def make_share(stored, lifetime=timedelta(hours=1)) -> Share:
    from django.utils import timezone

    return Share.create_for(file=stored, expires_at=timezone.now() + lifetime)


# --- create -------------------------------------------------------------------


def test_create_with_expires_in(alice_client, alice_file, clock):
    response = create(alice_client, file=alice_file.pk, expires_in=3600)

    assert response.status_code == 201
    body = response.json()
    share = Share.objects.get()
    assert body == {
        "id": share.pk,
        "file": alice_file.pk,
        "files": [alice_file.pk],
        "size": alice_file.size,
        "token": share.token,
        "url": f"http://testserver/s/{share.token}",
        "created_at": "2030-01-01T12:00:00Z",
        "expires_at": "2030-01-01T13:00:00Z",
        "status": "active",
        "ended_at": None,
        "end_reason": None,
        "download_count": 0,
        "max_downloads": None,
        "downloads_left": None,
        "has_password": False,
        "message": "",
        "lateness_ms": None,
        "notify_first_download": False,
        "remind_before_expiry": True,
    }
    assert len(share.token) >= 22  # at least 128 random bits, URL-safe base64
    assert share.expires_at == T0 + timedelta(hours=1)


def test_url_follows_the_request_host(alice_client, alice_file):
    response = alice_client.post(
        "/api/shares/", {"file": alice_file.pk}, format="json", HTTP_HOST="localhost", secure=True
    )

    token = response.json()["token"]
    assert response.json()["url"] == f"https://localhost/s/{token}"


def test_expires_in_may_be_a_string_of_digits(alice_client, alice_file, clock):
    # Form-encoded clients can only send strings.
    response = alice_client.post("/api/shares/", {"file": alice_file.pk, "expires_in": "90"})

    assert response.status_code == 201
    assert response.json()["expires_at"] == "2030-01-01T12:01:30Z"


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("2030-01-01T15:30:00+02:00", "2030-01-01T13:30:00Z"),
        ("2030-01-01T13:30:00Z", "2030-01-01T13:30:00Z"),
        ("2030-01-01T13:30:00.250Z", "2030-01-01T13:30:00.250000Z"),
    ],
)
def test_create_with_expires_at(alice_client, alice_file, clock, given, stored):
    response = create(alice_client, file=alice_file.pk, expires_at=given)

    assert response.status_code == 201
    assert response.json()["expires_at"] == stored


@pytest.mark.parametrize("given", ["2030-01-01T13:30:00", "2030-01-01 13:30", "2030-01-01T13:30:00.5"])
def test_a_time_without_its_offset_is_refused_with_a_message(alice_client, alice_file, clock, given):
    response = create(alice_client, file=alice_file.pk, expires_at=given)

    assert response.status_code == 400
    assert response.json() == {
        "expires_at": ["Give the time zone: an offset such as +02:00, or Z for UTC (e.g. 2026-12-01T09:00:00Z)."]
    }
    assert not Share.objects.exists()


def test_z_is_utc_whatever_the_servers_time_zone(alice_client, alice_file, clock, settings):
    settings.TIME_ZONE = "America/New_York"

    response = create(alice_client, file=alice_file.pk, expires_at="2030-01-01T13:30:00Z")

    assert response.status_code == 201
    assert Share.objects.get().expires_at == datetime(2030, 1, 1, 13, 30, tzinfo=UTC)


def test_neither_field_gives_the_default_lifetime(alice_client, alice_file, clock):
    response = create(alice_client, file=alice_file.pk)

    assert response.status_code == 201
    assert response.json()["expires_at"] == "2030-01-08T12:00:00Z"


def test_policy_row_is_honoured(alice_client, alice_file, clock):
    SharingPolicy.objects.create(default_lifetime=timedelta(hours=1), max_lifetime=timedelta(hours=2))

    default = create(alice_client, file=alice_file.pk)
    longest = create(alice_client, file=alice_file.pk, expires_in=7200)
    too_long = create(alice_client, file=alice_file.pk, expires_in=7201)

    assert default.json()["expires_at"] == "2030-01-01T13:00:00Z"
    assert longest.status_code == 201
    assert too_long.status_code == 400
    assert too_long.json() == {"expires_in": ["The share would last longer than the maximum lifetime (2 hours)."]}


@pytest.mark.parametrize("value", BAD_EXPIRES_IN)
def test_bad_expires_in_is_400(alice_client, alice_file, value):
    response = create(alice_client, file=alice_file.pk, expires_in=value)

    assert response.status_code == 400
    assert list(response.json()) == ["expires_in"]
    assert not Share.objects.exists()


def test_huge_expires_in_is_400(alice_client, alice_file):
    response = create(alice_client, file=alice_file.pk, expires_in=10**20)

    assert response.status_code == 400
    assert list(response.json()) == ["expires_in"]


def test_expires_in_over_the_maximum_is_400(alice_client, alice_file):
    response = create(alice_client, file=alice_file.pk, expires_in=30 * 86400 + 1)

    assert response.status_code == 400
    assert response.json() == {"expires_in": ["The share would last longer than the maximum lifetime (30 days)."]}


def test_expires_in_at_the_maximum_is_accepted(alice_client, alice_file):
    assert create(alice_client, file=alice_file.pk, expires_in=30 * 86400).status_code == 201


def test_both_fields_is_400(alice_client, alice_file, clock):
    response = create(alice_client, file=alice_file.pk, expires_in=60, expires_at="2030-01-01T13:00:00Z")

    assert response.status_code == 400
    assert response.json() == {"expires_in": ["Give expires_in or expires_at, not both."]}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("2030-01-01T11:59:59Z", "expires_at must be in the future."),
        ("2030-01-01T12:00:00Z", "expires_at must be in the future."),
        ("2030-01-31T12:00:01Z", "The share would last longer than the maximum lifetime (30 days)."),
        ("9999-12-31T23:59:59Z", "The share would last longer than the maximum lifetime (30 days)."),
    ],
)
def test_bad_expires_at_is_400(alice_client, alice_file, clock, value, message):
    response = create(alice_client, file=alice_file.pk, expires_at=value)

    assert response.status_code == 400
    assert response.json() == {"expires_at": [message]}


@pytest.mark.parametrize("value", ["tomorrow", "2030-13-01T00:00:00Z", "2030-01-01", "", 12345, True, None])
def test_unparseable_expires_at_is_400(alice_client, alice_file, clock, value):
    response = create(alice_client, file=alice_file.pk, expires_at=value)

    assert response.status_code == 400
    assert list(response.json()) == ["expires_at"]


def test_missing_file_is_400(alice_client):
    response = create(alice_client, expires_in=60)

    assert response.status_code == 400
    assert response.json() == {"file": ["Give file (one file id) or files (a list of file ids), not both or neither."]}


@pytest.mark.parametrize("field", ["notify_first_download", "remind_before_expiry"])
@pytest.mark.parametrize("value", [0, 1, "true", "yes"])
def test_a_notice_flag_is_a_json_boolean_or_400(alice_client, alice_file, field, value):
    # As the schema says (boolean): 0, "yes" or "true" is a client's mistake,
    # not a choice, and nothing is created.
    response = create(alice_client, file=alice_file.pk, expires_in=60, **{field: value})

    assert response.status_code == 400
    assert response.json() == {field: ["Must be true or false."]}
    assert not Share.objects.exists()


@pytest.mark.parametrize("value", [999999, "abc", None])
def test_unknown_file_is_400(alice_client, alice_file, value):
    response = create(alice_client, file=value, expires_in=60)

    assert response.status_code == 400
    assert list(response.json()) == ["file"]


def test_cannot_share_another_users_file(bob_client, alice_file):
    response = create(bob_client, file=alice_file.pk, expires_in=60)

    assert response.status_code == 400
    assert response.json() == {"file": [f'Invalid pk "{alice_file.pk}" - object does not exist.']}
    assert not Share.objects.exists()


# --- effective status -----------------------------------------------------------


def test_status_is_expired_once_past_the_deadline_without_the_daemon(alice_client, alice_file, clock):
    share_id = create(alice_client, file=alice_file.pk, expires_in=60).json()["id"]

    clock.tick(59)
    assert alice_client.get(f"/api/shares/{share_id}/").json()["status"] == "active"
    clock.tick(1)
    body = alice_client.get(f"/api/shares/{share_id}/").json()

    assert body["status"] == "expired"
    assert body["ended_at"] is None  # the daemon has not recorded it yet
    assert Share.objects.get().status == "active"


def test_lateness_ms_of_a_daemon_expiry(alice_client, alice_file, clock):
    share = make_share(alice_file, timedelta(seconds=10))
    expire_shares([share.pk], share.expires_at + timedelta(microseconds=12_500))

    body = alice_client.get(f"/api/shares/{share.pk}/").json()

    assert body["status"] == "expired"
    assert body["end_reason"] == "expired"
    assert body["ended_at"] == "2030-01-01T12:00:10.012500Z"
    assert body["lateness_ms"] == 12.5


# --- list and show ----------------------------------------------------------------


@pytest.fixture
def mixed_shares(alice, alice_file, make_file, clock):
    """One share in each effective state, created a second apart (newest last)."""
    other_file = make_file(alice, "other.txt")
    active = make_share(alice_file, timedelta(hours=1))
    clock.tick(1)
    lapsed = make_share(alice_file, timedelta(seconds=5))  # active in the table, expired in effect
    clock.tick(1)
    daemon_expired = make_share(other_file, timedelta(seconds=2))
    clock.tick(1)
    unshared = make_share(other_file, timedelta(hours=1))
    unshared.unshare()
    clock.tick(1)
    expire_shares([daemon_expired.pk], T0 + timedelta(seconds=4))
    clock.tick(10)
    return {"active": active, "lapsed": lapsed, "daemon_expired": daemon_expired, "unshared": unshared}


def ids(response) -> list[int]:
    return [item["id"] for item in response.json()["results"]]


def test_list_is_own_paginated_and_newest_first(alice_client, bob, make_file, mixed_shares):
    make_share(make_file(bob))

    response = alice_client.get("/api/shares/")

    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"count", "next", "previous", "results"}
    assert body["count"] == 4
    s = mixed_shares
    assert ids(response) == [s["unshared"].pk, s["daemon_expired"].pk, s["lapsed"].pk, s["active"].pk]
    assert set(body["results"][0]) == set(SHARE_FIELDS)
    assert [item["status"] for item in body["results"]] == ["unshared", "expired", "expired", "active"]


@pytest.mark.parametrize(
    ("status", "names"),
    [
        ("active", ["active"]),
        ("expired", ["daemon_expired", "lapsed"]),
        ("unshared", ["unshared"]),
    ],
)
def test_list_filters_by_effective_status(alice_client, mixed_shares, status, names):
    response = alice_client.get(f"/api/shares/?status={status}")

    assert response.status_code == 200
    assert ids(response) == [mixed_shares[name].pk for name in names]
    assert {item["status"] for item in response.json()["results"]} == {status}


def test_list_filters_by_file(alice_client, alice_file, mixed_shares):
    response = alice_client.get(f"/api/shares/?file={alice_file.pk}")

    assert ids(response) == [mixed_shares["lapsed"].pk, mixed_shares["active"].pk]


def test_list_filters_combine(alice_client, alice_file, mixed_shares):
    response = alice_client.get(f"/api/shares/?file={alice_file.pk}&status=active")

    assert ids(response) == [mixed_shares["active"].pk]


@pytest.mark.parametrize("value", ["ACTIVE", "gone", ""])
def test_list_with_invalid_status_is_400(alice_client, value):
    response = alice_client.get(f"/api/shares/?status={value}")

    assert response.status_code == 400
    assert list(response.json()) == ["status"]


@pytest.mark.parametrize("value", ["abc", "1.5", "-1", "", "\u0661"])
def test_list_with_invalid_file_is_400(alice_client, value):
    response = alice_client.get("/api/shares/", {"file": value})

    assert response.status_code == 400
    assert list(response.json()) == ["file"]


def test_list_with_an_unknown_file_is_empty(alice_client, mixed_shares):
    for value in ["999999", "99999999999999999999999"]:
        response = alice_client.get(f"/api/shares/?file={value}")
        assert response.status_code == 200
        assert response.json()["count"] == 0


def test_list_pages(alice_client, mixed_shares):
    first = alice_client.get("/api/shares/?page_size=3").json()
    second = alice_client.get(first["next"]).json()

    assert (first["count"], len(first["results"]), len(second["results"])) == (4, 3, 1)


def test_retrieve(alice_client, alice_file, clock):
    share = make_share(alice_file)

    response = alice_client.get(f"/api/shares/{share.pk}/")

    assert response.status_code == 200
    assert response.json()["token"] == share.token
    assert response.json()["expires_at"] == "2030-01-01T13:00:00Z"


def test_share_of_a_deleted_file(alice_client, alice_file, clock):
    share = make_share(alice_file)
    delete_file(alice_file)

    body = alice_client.get(f"/api/shares/{share.pk}/").json()

    assert (body["file"], body["status"], body["end_reason"]) == (None, "unshared", "file_deleted")
    assert body["ended_at"] == iso(T0)


# --- renew or shorten -----------------------------------------------------------------


def patch(client, share, **body):
    return client.patch(f"/api/shares/{share.pk}/", body, format="json")


def test_renew_with_expires_in_counts_from_now(alice_client, alice_file, clock):
    share = make_share(alice_file, timedelta(seconds=60))
    clock.tick(30)

    response = patch(alice_client, share, expires_in=3600)

    assert response.status_code == 200
    assert set(response.json()) == set(SHARE_FIELDS)
    assert response.json()["expires_at"] == "2030-01-01T13:00:30Z"
    share.refresh_from_db()
    assert share.expires_at == T0 + timedelta(seconds=3630)


def test_shorten_with_expires_at(alice_client, alice_file, clock):
    share = make_share(alice_file, timedelta(days=3))

    response = patch(alice_client, share, expires_at="2030-01-01T12:05:00Z")

    assert response.status_code == 200
    assert response.json()["expires_at"] == "2030-01-01T12:05:00Z"
    assert response.json()["status"] == "active"


def test_renewal_maximum_is_measured_from_now(alice_client, alice_file, clock):
    SharingPolicy.objects.create(default_lifetime=timedelta(hours=1), max_lifetime=timedelta(hours=2))
    share = make_share(alice_file, timedelta(hours=2))
    clock.tick(3600)

    assert patch(alice_client, share, expires_in=7200).status_code == 200
    too_long = patch(alice_client, share, expires_at="2030-01-01T15:00:01Z")

    assert too_long.status_code == 400
    assert too_long.json() == {"expires_at": ["The share would last longer than the maximum lifetime (2 hours)."]}
    share.refresh_from_db()
    assert share.expires_at == T0 + timedelta(hours=3)


def test_patch_with_neither_field_is_400(alice_client, alice_file):
    share = make_share(alice_file)

    response = patch(alice_client, share)

    assert response.status_code == 400
    assert response.json() == {
        "non_field_errors": [
            "Give at least one of expires_in, expires_at, max_downloads, password, message, "
            "notify_first_download, remind_before_expiry."
        ]
    }


def test_patch_with_both_fields_is_400(alice_client, alice_file, clock):
    share = make_share(alice_file)

    response = patch(alice_client, share, expires_in=60, expires_at="2030-01-01T12:30:00Z")

    assert response.status_code == 400
    assert list(response.json()) == ["expires_in"]


@pytest.mark.parametrize("value", BAD_EXPIRES_IN)
def test_patch_with_bad_expires_in_is_400(alice_client, alice_file, value):
    share = make_share(alice_file)
    before = share.expires_at

    response = patch(alice_client, share, expires_in=value)

    assert response.status_code == 400
    assert list(response.json()) == ["expires_in"]
    share.refresh_from_db()
    assert share.expires_at == before


@pytest.mark.parametrize("value", ["2029-12-31T12:00:00Z", "not a date"])
def test_patch_with_bad_expires_at_is_400(alice_client, alice_file, clock, value):
    share = make_share(alice_file)

    response = patch(alice_client, share, expires_at=value)

    assert response.status_code == 400
    assert list(response.json()) == ["expires_at"]


@pytest.mark.parametrize(
    "body",
    [
        {"token": "mine-now", "expires_in": 60},
        {"status": "active", "expires_in": 60},
        {"file": 1, "expires_in": 60},
        {"download_count": 0},
    ],
)
def test_patch_of_other_fields_is_400(alice_client, alice_file, body):
    share = make_share(alice_file)
    before = (share.token, share.expires_at, share.status, share.file_ids)

    response = alice_client.patch(f"/api/shares/{share.pk}/", body, format="json")

    assert response.status_code == 400
    field = next(name for name in body if name != "expires_in")
    assert response.json() == {
        field: [
            "This field cannot be changed; send only expires_in, expires_at, max_downloads, password, message, "
            "notify_first_download, remind_before_expiry."
        ]
    }
    share.refresh_from_db()
    assert (share.token, share.expires_at, share.status, share.file_ids) == before


def test_patch_of_an_unshared_share_is_409(alice_client, alice_file):
    share = make_share(alice_file)
    share.unshare()

    response = patch(alice_client, share, expires_in=60)

    assert response.status_code == 409
    assert response.json() == {"detail": "The share is unshared; only an active share can be changed."}


def test_patch_of_a_lapsed_share_is_409_and_does_not_resurrect_it(alice_client, alice_file, clock):
    share = make_share(alice_file, timedelta(seconds=10))
    clock.tick(10)

    response = patch(alice_client, share, expires_in=3600)

    assert response.status_code == 409
    assert response.json() == {"detail": "The share is expired; only an active share can be changed."}
    share.refresh_from_db()
    assert share.expires_at == T0 + timedelta(seconds=10)


def test_patch_of_a_daemon_expired_share_is_409(alice_client, alice_file, clock):
    share = make_share(alice_file, timedelta(seconds=10))
    clock.tick(11)
    len(expire_overdue(T0 + timedelta(seconds=10), 10_000))

    assert patch(alice_client, share, expires_in=3600).status_code == 409


def test_put_is_not_allowed(alice_client, alice_file):
    share = make_share(alice_file)

    response = alice_client.put(f"/api/shares/{share.pk}/", {"expires_in": 60}, format="json")

    assert response.status_code == 405


# --- unshare ------------------------------------------------------------------------


def test_delete_unshares_and_keeps_the_record(alice_client, alice_file, clock):
    share = make_share(alice_file)
    clock.tick(5)

    response = alice_client.delete(f"/api/shares/{share.pk}/")

    assert response.status_code == 204
    share.refresh_from_db()
    assert (share.status, share.end_reason, share.ended_at) == ("unshared", "unshared", T0 + timedelta(seconds=5))
    body = alice_client.get(f"/api/shares/{share.pk}/").json()
    assert (body["status"], body["end_reason"], body["ended_at"]) == ("unshared", "unshared", "2030-01-01T12:00:05Z")


def test_delete_of_an_ended_share_is_a_no_op(alice_client, alice_file, clock):
    unshared = make_share(alice_file)
    unshared.unshare()
    expired = make_share(alice_file, timedelta(seconds=1))
    clock.tick(2)
    len(expire_overdue(T0 + timedelta(seconds=1), 10_000))
    clock.tick(60)

    first = alice_client.delete(f"/api/shares/{unshared.pk}/")
    second = alice_client.delete(f"/api/shares/{expired.pk}/")

    assert (first.status_code, second.status_code) == (204, 204)
    unshared.refresh_from_db()
    expired.refresh_from_db()
    assert (unshared.status, unshared.ended_at) == ("unshared", T0)
    assert (expired.status, expired.end_reason, expired.ended_at) == ("expired", "expired", T0 + timedelta(seconds=1))


# --- isolation ----------------------------------------------------------------------


@pytest.mark.parametrize("method", ["get", "patch", "delete"])
def test_another_users_share_is_404(bob_client, alice_file, method):
    share = make_share(alice_file)
    before = (share.status, share.expires_at)

    response = getattr(bob_client, method)(f"/api/shares/{share.pk}/", {"expires_in": 60}, format="json")

    assert response.status_code == 404
    share.refresh_from_db()
    assert (share.status, share.expires_at) == before


def test_another_users_shares_are_not_listed(bob_client, alice_file):
    make_share(alice_file)

    assert bob_client.get("/api/shares/").json()["count"] == 0
    assert bob_client.get(f"/api/shares/?file={alice_file.pk}").json()["count"] == 0
