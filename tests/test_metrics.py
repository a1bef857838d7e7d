"""/metrics: Prometheus's own parser reads it, and after a scripted run
(uploads, downloads, expiries, refusals) every counter equals what the
shares' history says; off without METRICS_TOKEN, a 404 to a wrong token."""

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from sharing.models import Share, ShareEvent, StoredFile, expire_overdue
from tests.helpers import run_manage
from webhooks.models import WebhookDelivery, WebhookEndpoint

TOKEN = "metrics-token-for-tests-0123456789"
DATA = bytes(range(256)) * 8  # 2048 bytes


def scrape(token=TOKEN):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token is not None else {}
    return Client().get("/metrics", **headers)


def families(response) -> dict:
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    return {family.name: family for family in text_string_to_metric_families(response.content.decode())}


def sample(found: dict, family: str, sample_name: str, **labels) -> float:
    (value,) = [s.value for s in found[family].samples if s.name == sample_name and s.labels == labels]
    return value


def drain(response) -> bytes:
    data = b"".join(response.streaming_content) if response.streaming else response.content
    response.close()
    return data


def link(share) -> str:
    return reverse("public-share", args=[share.token])


@pytest.fixture
def metrics_on(settings):
    settings.METRICS_TOKEN = TOKEN


@pytest.mark.django_db
def test_it_answers_the_token_and_is_off_without_one(settings, alice):
    settings.METRICS_TOKEN = TOKEN
    assert scrape().status_code == 200
    settings.METRICS_TOKEN = ""
    assert scrape().status_code == 404
    assert scrape(token=None).status_code == 404
    assert scrape(token="").status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize("header", ["", "Bearer", "Bearer wrong-token", f"Token {TOKEN}", f"Bearer {TOKEN}x"])
def test_a_wrong_or_missing_token_finds_nothing(metrics_on, header):
    assert scrape().status_code == 200
    response = Client().get("/metrics", HTTP_AUTHORIZATION=header) if header else Client().get("/metrics")
    assert response.status_code == 404
    assert b"microcloud_" not in response.content


@pytest.mark.django_db(transaction=True)
def test_after_a_scripted_run_every_counter_equals_the_history(metrics_on, alice, make_file):
    files = [
        make_file(alice, name=f"f{n}.bin", data=DATA[: 500 + n], content_type="application/octet-stream")
        for n in range(3)
    ]
    now = timezone.now()
    open_link = Share.create_for(file=files[0], expires_at=now + timedelta(hours=1))
    limited = Share.create_for(file=files[1], expires_at=now + timedelta(hours=1), max_downloads=1)
    locked = Share.create_for(file=files[2], expires_at=now + timedelta(hours=1), password="pw-1234")
    due = [Share.create_for(file=files[0], expires_at=now + timedelta(seconds=30 + n)) for n in range(4)]
    unshared = Share.create_for(file=files[1], expires_at=now + timedelta(hours=1))
    unshared.unshare()

    client = Client()
    for _ in range(3):
        assert len(drain(client.get(link(open_link)))) == files[0].size
    assert len(drain(client.get(link(open_link), HTTP_RANGE="bytes=100-199"))) == 100
    drain(client.get(link(limited)))
    assert client.get(link(limited)).status_code == 410  # its one download is used
    for _ in range(2):
        assert client.get(link(locked), HTTP_X_SHARE_PASSWORD="wrong").status_code == 403
    drain(client.get(link(locked), HTTP_X_SHARE_PASSWORD="pw-1234"))
    # As a daemon would, 0.3 to 270 s late (a daemon that was down): lateness in several buckets.
    expired = expire_overdue(now + timedelta(seconds=30.3), limit=1)
    expired += expire_overdue(now + timedelta(seconds=33.5), limit=100)
    expired += expire_overdue(now + timedelta(minutes=5), limit=100)
    assert sorted(expired) == sorted(share.pk for share in due)

    found = families(scrape())
    events = list(ShareEvent.objects.all())

    def of(kind):
        return [event for event in events if event.kind == kind]

    assert (
        sample(found, "microcloud_downloads", "microcloud_downloads_total") == len(of(ShareEvent.Kind.DOWNLOADED)) == 5
    )
    for kind in ("downloaded", "resumed", "previewed"):
        total = sum(event.bytes or 0 for event in of(kind))
        assert sample(found, "microcloud_download_bytes", "microcloud_download_bytes_total", kind=kind) == total
    assert sample(found, "microcloud_download_bytes", "microcloud_download_bytes_total", kind="resumed") == 100
    refused = sample(found, "microcloud_refusals", "microcloud_refusals_total", reason="wrong_password")
    assert refused == len(of(ShareEvent.Kind.WRONG_PASSWORD)) == 2

    lateness = [event.lateness.total_seconds() for event in of(ShareEvent.Kind.EXPIRED)]
    assert len(lateness) == 4
    histogram = "microcloud_expiry_lateness_seconds"
    assert sample(found, histogram, f"{histogram}_count") == len(lateness)
    assert sample(found, histogram, f"{histogram}_sum") == pytest.approx(sum(lateness))
    buckets = {s.labels["le"]: s.value for s in found[histogram].samples if s.name == f"{histogram}_bucket"}
    for bound, count in buckets.items():
        assert count == sum(late <= float(bound) for late in lateness), bound

    states = {s.labels["state"]: s.value for s in found["microcloud_shares"].samples}
    assert states == {
        "active": 2,  # the open link and the locked one
        "overdue": 0,
        "expired": 4,
        "download_limit": 1,
        "unshared": 1,
    }
    assert sample(found, "microcloud_stored_files", "microcloud_stored_files") == StoredFile.objects.count() == 3
    assert sample(found, "microcloud_stored_bytes", "microcloud_stored_bytes") == sum(f.size for f in files)


@pytest.mark.django_db
def test_overdue_shares_are_told_apart_from_live_ones(metrics_on, make_shares, settings):
    settings.EXPIRY_REFRESH_INTERVAL = 7200.0
    late = make_shares(3, 60)
    # Past their deadline, and no daemon has ended them.
    Share.objects.filter(pk__in=[share.pk for share in late]).update(
        created_at=timezone.now() - timedelta(hours=1), expires_at=timezone.now() - timedelta(seconds=5)
    )
    make_shares(2, 3600)
    make_shares(4, 3 * 3600)  # beyond the daemon's window
    found = families(scrape())
    states = {s.labels["state"]: s.value for s in found["microcloud_shares"].samples}
    assert states["overdue"] == 3
    assert states["active"] == 6
    assert sample(found, "microcloud_expiry_window_shares", "microcloud_expiry_window_shares") == 2
    assert sample(found, "microcloud_expiry_daemon_up", "microcloud_expiry_daemon_up") == 0


@pytest.mark.django_db
def test_the_webhook_queue_shows_its_depth_and_oldest_age(metrics_on, alice):
    endpoint = WebhookEndpoint.objects.create(owner=alice, url="https://example.com/hook", events=["expired"])
    now = timezone.now()
    for n, age in enumerate((30, 10)):
        WebhookDelivery.objects.create(
            endpoint=endpoint, webhook_id=f"msg_{n}", payload={}, created_at=now - timedelta(seconds=age)
        )
    WebhookDelivery.objects.create(endpoint=endpoint, webhook_id="msg_done", payload={}, delivered_at=now)
    found = families(scrape())
    assert sample(found, "microcloud_webhook_queue_deliveries", "microcloud_webhook_queue_deliveries") == 2
    assert (
        sample(found, "microcloud_webhook_queue_oldest_age_seconds", "microcloud_webhook_queue_oldest_age_seconds")
        >= 30
    )


@pytest.mark.django_db
def test_every_name_follows_prometheus_conventions(metrics_on):
    found = families(scrape())
    for family in found.values():
        assert family.name.startswith("microcloud_")
        if family.type == "counter":
            assert all(s.name.endswith(("_total", "_created")) for s in family.samples), family.name
        assert "_ms" not in family.name
        assert "milliseconds" not in family.name


def test_a_short_token_stops_the_start_with_its_name():
    checked = run_manage("check", METRICS_TOKEN="short-token", SECRET_KEY="k" * 60)
    assert checked.returncode != 0
    assert "METRICS_TOKEN must be at least 20 characters" in checked.stderr
