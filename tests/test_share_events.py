"""A share's history: one event for every change, written with the change or
not at all, and none for a change that did not happen."""

import time
from datetime import timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, connection, transaction
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from expiry.store import ShareStore
from sharing.models import Download, Share, ShareEvent, Visitor, delete_file, downloads, expire_overdue, stored_address
from sharing.models.events import USER_AGENT_MAX
from tests.helpers import run_manage

Kind = ShareEvent.Kind
DATA = bytes(range(256)) * 16  # 4096 bytes


def kinds(share) -> list[str]:
    return list(ShareEvent.objects.filter(share=share).order_by("at", "id").values_list("kind", flat=True))


def only(share, kind) -> ShareEvent:
    (event,) = ShareEvent.objects.filter(share=share, kind=kind)
    return event


def share_of(stored, seconds=3600, **rules) -> Share:
    return Share.create_for(file=stored, expires_at=timezone.now() + timedelta(seconds=seconds), **rules)


def link(share) -> str:
    return reverse("public-share", args=[share.token])


def drain(response) -> bytes:
    data = b"".join(response.streaming_content) if response.streaming else response.content
    response.close()
    return data


@pytest.fixture
def big(alice, make_file):
    return make_file(alice, name="big.bin", data=DATA, content_type="application/octet-stream")


# --- created, renewed, changed ----------------------------------------------------


@pytest.mark.django_db
def test_creation_is_recorded_with_its_deadline_and_rules(shared_file):
    share = share_of(shared_file, max_downloads=3, password="pw-1234")
    event = only(share, Kind.CREATED)
    assert event.at == share.created_at
    assert event.expires_at == share.expires_at
    assert event.details == {"max_downloads": 3, "password": True, "message": False}
    assert kinds(share) == [Kind.CREATED]


@pytest.mark.django_db
def test_a_renewal_records_the_old_and_the_new_deadline(shared_file):
    share = share_of(shared_file)
    old = share.expires_at
    new = old + timedelta(days=2)
    assert share.set_expiry(new)
    event = only(share, Kind.RENEWED)
    assert (event.old_expires_at, event.expires_at) == (old, new)
    assert event.at == share.updated_at

    shorter = timezone.now() + timedelta(minutes=5)
    assert share.set_expiry(shorter)  # shortening is a renewal too: the deadline moved
    assert kinds(share) == [Kind.CREATED, Kind.RENEWED, Kind.RENEWED]
    assert ShareEvent.objects.filter(share=share, kind=Kind.RENEWED).last().old_expires_at == new


@pytest.mark.django_db
def test_limit_and_password_changes_are_recorded_without_the_password(shared_file):
    share = share_of(shared_file)
    assert share.change(max_downloads=5, password="secret-pw")
    event = only(share, Kind.CHANGED)
    assert event.details == {"max_downloads": [None, 5], "password": "set"}
    assert "secret" not in str(event.details)

    assert share.change(password="")
    assert ShareEvent.objects.filter(share=share, kind=Kind.CHANGED).last().details == {"password": "removed"}


@pytest.mark.django_db
def test_a_change_that_changes_nothing_records_nothing(shared_file):
    share = share_of(shared_file, max_downloads=5)
    assert share.change(max_downloads=5, expires_at=share.expires_at)
    assert share.change()
    assert kinds(share) == [Kind.CREATED]


@pytest.mark.django_db
def test_a_renewal_of_an_ended_or_lapsed_share_records_nothing(shared_file):
    unshared = share_of(shared_file)
    unshared.unshare()
    assert not unshared.set_expiry(timezone.now() + timedelta(days=1))
    assert kinds(unshared) == [Kind.CREATED, Kind.UNSHARED]

    lapsed = share_of(shared_file, seconds=0.05)
    time.sleep(0.1)  # past its deadline; the daemon has not run
    assert not lapsed.set_expiry(timezone.now() + timedelta(days=1))
    assert kinds(lapsed) == [Kind.CREATED]

    live = share_of(shared_file)
    assert not live.set_expiry(timezone.now() - timedelta(seconds=1))  # a deadline already passed
    assert kinds(live) == [Kind.CREATED]


@pytest.mark.django_db
def test_a_limit_equal_to_the_count_ends_the_share_and_says_so(shared_file):
    share = share_of(shared_file)
    assert share.count_download()
    assert share.change(max_downloads=1)
    assert share.status == Share.Status.EXPIRED
    assert kinds(share) == [Kind.CREATED, Kind.DOWNLOADED, Kind.CHANGED, Kind.DOWNLOAD_LIMIT_REACHED]
    assert only(share, Kind.CHANGED).details == {"max_downloads": [None, 1]}


# --- unshared, file deleted, expired ----------------------------------------------


@pytest.mark.django_db
def test_unsharing_is_recorded_once(shared_file):
    share = share_of(shared_file)
    assert share.unshare()
    assert not share.unshare()  # already ended: no second event
    event = only(share, Kind.UNSHARED)
    assert event.at == share.ended_at
    assert kinds(share) == [Kind.CREATED, Kind.UNSHARED]


@pytest.mark.django_db
def test_deleting_a_file_records_file_deleted_or_expired_for_each_share_it_ended(shared_file):
    live = share_of(shared_file)
    lapsed = share_of(shared_file, seconds=0.05)
    ended = share_of(shared_file)
    ended.unshare()
    time.sleep(0.1)
    delete_file(shared_file)

    live.refresh_from_db()
    lapsed.refresh_from_db()
    assert kinds(live) == [Kind.CREATED, Kind.FILE_DELETED]
    assert only(live, Kind.FILE_DELETED).at == live.ended_at
    assert kinds(lapsed) == [Kind.CREATED, Kind.EXPIRED]
    expired = only(lapsed, Kind.EXPIRED)
    assert expired.at == lapsed.ended_at
    assert expired.expires_at == lapsed.expires_at
    assert expired.lateness == lapsed.ended_at - lapsed.expires_at
    assert kinds(ended) == [Kind.CREATED, Kind.UNSHARED]  # nothing more for a share already ended


@pytest.mark.django_db
def test_the_querysets_expire_due_records_each_expiry_it_made(make_shares):
    due, later = make_shares(2, 1)
    later.set_expiry(timezone.now() + timedelta(hours=1))
    now = timezone.now() + timedelta(seconds=2)
    assert len(expire_overdue(now, 10_000)) == 1
    assert len(expire_overdue(now, 10_000)) == 0
    event = only(due, Kind.EXPIRED)
    assert (event.at, event.lateness) == (now, now - due.expires_at)
    assert not ShareEvent.objects.filter(share=later, kind=Kind.EXPIRED).exists()


@pytest.mark.django_db(transaction=True)
def test_the_daemons_store_records_exactly_the_ids_its_update_returned(make_shares):
    due, renewed, unshared = make_shares(3, 1)
    renewed.set_expiry(timezone.now() + timedelta(hours=1))
    unshared.unshare()
    now = time.time() + 5
    assert ShareStore().expire([due.pk, renewed.pk, unshared.pk], now) == [due.pk]
    assert ShareStore().expire([due.pk], now + 1) == []  # already expired: no second event
    (event,) = ShareEvent.objects.filter(kind=Kind.EXPIRED)
    due.refresh_from_db()
    assert event.share_id == due.pk
    assert event.at == due.ended_at
    assert event.expires_at == due.expires_at
    assert event.lateness == due.ended_at - due.expires_at
    assert event.user_agent == ""
    assert event.details == {}


@pytest.mark.django_db(transaction=True)
def test_the_daemons_overdue_sweep_records_its_expiries(make_shares):
    ids = sorted(share.pk for share in make_shares(5, 1))
    # (PostgreSQL may expire more than the limit here: the LIMITed sub-select
    # can be run again within the UPDATE. Each id it returns is still one expiry.)
    expired = ShareStore().expire_overdue(time.time() + 5, 3)
    assert len(expired) >= 3
    assert sorted(ShareEvent.objects.filter(kind=Kind.EXPIRED).values_list("share_id", flat=True)) == sorted(expired)
    rest = ShareStore().expire_overdue(time.time() + 5, 10)
    assert sorted(expired + rest) == ids
    assert sorted(ShareEvent.objects.filter(kind=Kind.EXPIRED).values_list("share_id", flat=True)) == ids


# --- downloads through the link ----------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_download_records_bytes_address_and_user_agent(big):
    share = share_of(big)
    response = Client().get(link(share), REMOTE_ADDR="203.0.113.77", HTTP_USER_AGENT="curl/8.5.0")
    assert drain(response) == DATA
    event = only(share, Kind.DOWNLOADED)
    assert event.bytes == len(DATA)
    assert event.client_address == "203.0.113.0"
    assert event.user_agent == "curl/8.5.0"
    assert Download.objects.get(share=share).started_at >= event.at


@pytest.mark.django_db(transaction=True)
def test_a_range_download_records_the_range_length(big):
    share = share_of(big)
    drain(Client().get(link(share), HTTP_RANGE="bytes=0-99"))
    assert only(share, Kind.DOWNLOADED).bytes == 100


@pytest.mark.django_db(transaction=True)
def test_a_resume_is_recorded_and_the_copy_it_completes_ends_the_share(alice, make_file):
    data = bytes(range(256)) * 8192  # 2 MiB: several blocks of the response
    share = share_of(make_file(alice, name="big.bin", data=data), max_downloads=1)
    first = Client().get(link(share), HTTP_USER_AGENT="browser/1")
    received = next(iter(first.streaming_content))[:100_000]  # the connection breaks
    first.close()
    # Another client, no cookie: the budget alone decides.
    rest = Client().get(link(share), HTTP_RANGE=f"bytes={len(received)}-", HTTP_IF_RANGE=f'"{share.file.sha256}"')
    assert rest.status_code == 206
    drain(rest)

    # Each response's receipt when it closed: the first stopped where its
    # reading stopped (without gunicorn's socket, the bytes read), the resume
    # completed the file.
    assert kinds(share) == [
        Kind.CREATED,
        Kind.DOWNLOADED,
        Kind.DELIVERED,
        Kind.RESUMED,
        Kind.DELIVERED,
        Kind.DOWNLOAD_LIMIT_REACHED,
    ]
    assert only(share, Kind.DOWNLOADED).bytes == len(data)
    assert only(share, Kind.RESUMED).bytes == len(data) - len(received)
    cut, completed = share.events.filter(kind=Kind.DELIVERED).order_by("id")
    assert cut.details["download"] == only(share, Kind.DOWNLOADED).pk
    assert (cut.details["from"], cut.details["whole"], cut.details["size"]) == (0, False, len(data))
    assert len(received) <= cut.details["until"] < len(data)
    assert completed.details["download"] == only(share, Kind.RESUMED).pk
    assert (completed.details["until"], completed.details["whole"]) == (len(data), True)
    assert completed.bytes == len(data) - len(received)
    share.refresh_from_db()
    assert only(share, Kind.DOWNLOAD_LIMIT_REACHED).at == share.ended_at
    assert share.download_count == 1


@pytest.mark.django_db(transaction=True)
def test_a_refused_download_records_nothing(big):
    share = share_of(big, max_downloads=1)
    drain(Client().get(link(share)))
    assert Client().get(link(share)).status_code == 410  # used up
    unshared = share_of(big)
    unshared.unshare()
    assert Client().get(link(unshared)).status_code == 410
    assert Client().head(link(share_of(big))).status_code == 200  # HEAD counts nothing

    assert ShareEvent.objects.filter(kind=Kind.DOWNLOADED).count() == 1
    assert kinds(share) == [Kind.CREATED, Kind.DOWNLOADED, Kind.DELIVERED, Kind.DOWNLOAD_LIMIT_REACHED]


@pytest.mark.django_db
def test_a_very_long_user_agent_is_cut(shared_file):
    share = share_of(shared_file)
    assert share.count_download(visitor=Visitor("192.0.2.1", "x" * 5000))
    assert only(share, Kind.DOWNLOADED).user_agent == "x" * USER_AGENT_MAX


# --- wrong passwords -----------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_wrong_password_on_the_form_is_recorded_with_the_client(big):
    share = share_of(big, password="right-password")
    response = Client().post(
        link(share), {"password": "wrong"}, REMOTE_ADDR="198.51.100.23", HTTP_USER_AGENT="Firefox/130"
    )
    assert response.status_code == 403
    event = only(share, Kind.WRONG_PASSWORD)
    assert (event.client_address, event.user_agent) == ("198.51.100.0", "Firefox/130")

    client = Client()
    assert client.post(link(share), {"password": "right-password"}).status_code == 303
    assert ShareEvent.objects.filter(share=share, kind=Kind.WRONG_PASSWORD).count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_wrong_password_header_is_recorded_too(big):
    share = share_of(big, password="right-password")
    assert Client().get(link(share), HTTP_X_SHARE_PASSWORD="nope").status_code == 403
    assert kinds(share) == [Kind.CREATED, Kind.WRONG_PASSWORD]


@pytest.mark.django_db(transaction=True)
def test_refusals_by_the_rate_limit_are_not_recorded(big):
    share = share_of(big, password="right-password")
    statuses = [Client().post(link(share), {"password": f"guess-{n}"}).status_code for n in range(13)]
    assert statuses.count(429) == 3  # 10 wrong passwords per link in 10 minutes
    assert ShareEvent.objects.filter(share=share, kind=Kind.WRONG_PASSWORD).count() == 10


# --- client addresses ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "address", "stored"),
    [
        ("truncated", "203.0.113.77", "203.0.113.0"),
        ("truncated", "2001:db8:abcd:1234:5678::1", "2001:db8:abcd::"),
        ("truncated", "::ffff:192.0.2.99", "192.0.2.0"),
        ("full", "203.0.113.77", "203.0.113.77"),
        ("full", "2001:db8:abcd:1234:5678::1", "2001:db8:abcd:1234:5678::1"),
        ("none", "203.0.113.77", None),
        ("none", "2001:db8::1", None),
        ("truncated", "not-an-address", None),
        ("truncated", "", None),
    ],
)
def test_addresses_are_kept_as_the_setting_says(settings, mode, address, stored):
    settings.EVENT_CLIENT_ADDRESS = mode
    assert stored_address(address) == stored


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("mode", "stored"), [("full", "203.0.113.77"), ("none", None)])
def test_the_setting_reaches_the_recorded_download(settings, big, mode, stored):
    settings.EVENT_CLIENT_ADDRESS = mode
    share = share_of(big)
    drain(Client().get(link(share), REMOTE_ADDR="203.0.113.77"))
    assert only(share, Kind.DOWNLOADED).client_address == stored


@pytest.mark.django_db(transaction=True)
def test_behind_a_proxy_the_forwarded_client_is_recorded(settings, big):
    settings.NUM_PROXIES = 1
    share = share_of(big)
    drain(Client().get(link(share), REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR="2001:db8:1:2::9"))
    assert only(share, Kind.DOWNLOADED).client_address == "2001:db8:1::"


# --- an event and its change: both or neither ----------------------------------------------


@pytest.fixture
def events_refused():
    """Make every INSERT of an event fail inside the database, after the
    change's UPDATE has run in the same transaction."""
    table = ShareEvent._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(
                f"CREATE TRIGGER refuse_events BEFORE INSERT ON {table} BEGIN SELECT RAISE(ABORT, 'refused'); END"
            )
        else:
            cursor.execute(
                "CREATE FUNCTION refuse_event() RETURNS trigger LANGUAGE plpgsql AS "
                "$$ BEGIN RAISE EXCEPTION 'refused'; END $$"
            )
            cursor.execute(
                f"CREATE TRIGGER refuse_events BEFORE INSERT ON {table} FOR EACH ROW EXECUTE FUNCTION refuse_event()"
            )
    yield
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TRIGGER refuse_events{'' if connection.vendor == 'sqlite' else f' ON {table}'}")
        if connection.vendor != "sqlite":
            cursor.execute("DROP FUNCTION refuse_event()")


def state(share) -> tuple:
    share.refresh_from_db()
    return share.status, share.expires_at, share.download_count, share.max_downloads


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "change",
    [
        lambda share: share.unshare(),
        lambda share: share.set_expiry(share.expires_at + timedelta(days=1)),
        lambda share: share.change(max_downloads=1),
        lambda share: share.reserve_bytes(first=0, end=10),
        lambda share: ShareStore().expire([share.pk], share.expires_at.timestamp() + 5000),
        lambda share: delete_file(share.file),
    ],
    ids=["unshare", "renew", "limit", "download", "daemon_expiry", "file_deletion"],
)
def test_a_change_whose_event_fails_is_rolled_back_with_it(shared_file, request, change):
    share = share_of(shared_file)
    before = state(share)
    request.getfixturevalue("events_refused")
    with pytest.raises(DatabaseError):
        change(share)
    assert state(share) == before
    assert Download.objects.count() == 0
    assert kinds(share) == [Kind.CREATED]


@pytest.mark.django_db(transaction=True)
def test_an_error_after_the_event_takes_the_download_and_its_event_back(shared_file, monkeypatch):
    share = share_of(shared_file, max_downloads=1)

    def broken(*args, **kwargs):
        raise DatabaseError("disk full")

    monkeypatch.setattr(downloads, "record_download", broken)  # after the reserving UPDATE
    with pytest.raises(DatabaseError):
        share.reserve_bytes(first=0, end=10)
    assert state(share)[:3] == (Share.Status.ACTIVE, share.expires_at, 0)
    assert share.bytes_left == share.budget  # nothing reserved
    assert kinds(share) == [Kind.CREATED]


@pytest.mark.django_db(transaction=True)
def test_a_caller_rolling_back_takes_the_change_and_its_event_back(shared_file):
    share = share_of(shared_file)
    with transaction.atomic():
        assert share.unshare()
        assert kinds(share) == [Kind.CREATED, Kind.UNSHARED]  # inside: the change and its event
        transaction.set_rollback(True)
    share.refresh_from_db()
    assert share.status == Share.Status.ACTIVE
    assert kinds(share) == [Kind.CREATED]


def test_an_unknown_address_mode_stops_start_up_naming_the_variable():
    result = run_manage("check", SECRET_KEY="k" * 50, EVENT_CLIENT_ADDRESS="partial")
    assert result.returncode != 0
    assert "ImproperlyConfigured: EVENT_CLIENT_ADDRESS must be truncated, full or none" in result.stderr
    assert run_manage("check", SECRET_KEY="k" * 50, EVENT_CLIENT_ADDRESS="Full").returncode == 0


def test_an_unknown_address_mode_set_in_code_is_refused_too(settings):
    settings.EVENT_CLIENT_ADDRESS = "partial"
    with pytest.raises(ImproperlyConfigured, match="EVENT_CLIENT_ADDRESS"):
        stored_address("192.0.2.1")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("deadline_micros", "stamp_micros"), [(0, 0), (0, 250), (999_999, 1), (123_456, 0)])
def test_the_daemons_lateness_is_exact_to_the_microsecond(shared_file, deadline_micros, stamp_micros):
    """SQLite computes it from the stored text (with or without a fraction)."""
    deadline = (timezone.now() + timedelta(seconds=3)).replace(microsecond=deadline_micros)
    share = Share.create_for(file=shared_file, expires_at=deadline)
    ended = (deadline + timedelta(seconds=2)).replace(microsecond=stamp_micros)
    assert ShareStore().expire([share.pk], ended.timestamp()) == [share.pk]
    event = only(share, Kind.EXPIRED)
    share.refresh_from_db()
    assert event.lateness == share.ended_at - deadline
    assert event.expires_at == deadline


@pytest.mark.django_db(transaction=True)
def test_a_bursts_events_are_exact_too(make_shares):
    """Many rows at once take SQLite's own copy (expiry/store.py), not values."""
    shares = make_shares(150, 1)
    Share.objects.filter(pk=shares[0].pk).update(expires_at=shares[0].expires_at.replace(microsecond=0))
    Share.objects.filter(pk=shares[1].pk).update(expires_at=shares[1].expires_at.replace(microsecond=999_999))
    now = time.time() + 5
    assert sorted(ShareStore().expire([s.pk for s in shares], now)) == sorted(s.pk for s in shares)
    events = {e.share_id: e for e in ShareEvent.objects.filter(kind=Kind.EXPIRED)}
    assert len(events) == 150
    for share in Share.objects.filter(pk__in=events):
        assert events[share.pk].lateness == share.ended_at - share.expires_at
        assert events[share.pk].expires_at == share.expires_at
