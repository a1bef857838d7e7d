"""The outbox: each event's deliveries are written in its transaction, for
the owner's active endpoints that want its kind, by every path that writes
events (model methods, the daemon's raw SQL on both engines)."""

import time
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from expiry.store import ShareStore
from sharing.models import Share, ShareEvent
from webhooks.models import WebhookDelivery, WebhookEndpoint, webhook_id

pytestmark = pytest.mark.django_db


def endpoint(owner, events, **fields):
    return WebhookEndpoint.objects.create(owner=owner, url="http://127.0.0.1:9/hook", events=events, **fields)


def deliveries(**filters):
    return list(WebhookDelivery.objects.filter(**filters).order_by("id").select_related("event"))


def new_share(stored_file, seconds=3600):
    return Share.create_for(file=stored_file, expires_at=timezone.now() + timedelta(seconds=seconds))


def test_a_model_change_writes_one_delivery_per_wanting_endpoint(alice, bob, shared_file):
    everything = endpoint(alice, ["created", "unshared", "expired"])
    only_expired = endpoint(alice, ["expired"])
    endpoint(alice, ["created"], state=WebhookEndpoint.State.FAILING)  # failing: nothing new for it
    endpoint(bob, ["created", "unshared"])  # another owner's endpoint never sees alice's shares
    share = new_share(shared_file)
    share.unshare()
    rows = deliveries()
    events = list(ShareEvent.objects.filter(share=share).order_by("id"))
    assert [(row.endpoint_id, row.event_id) for row in rows] == [(everything.pk, event.pk) for event in events]
    assert [row.event.kind for row in rows] == ["created", "unshared"]
    for row in rows:
        assert row.share_id == share.pk
        assert row.webhook_id == webhook_id(row.event_id, everything.pk)
        assert row.next_attempt_at == row.event.at
        assert row.delivered_at is None
        assert row.attempts == 0
    assert not deliveries(endpoint=only_expired)


def test_a_download_and_the_limit_it_reached_both_go_out_in_order(alice, shared_file):
    hook = endpoint(alice, ["downloaded", "download_limit_reached"])
    share = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1), max_downloads=1)
    assert share.count_download()
    assert [row.event.kind for row in deliveries(endpoint=hook)] == ["downloaded", "download_limit_reached"]


def test_downloads_of_a_link_without_a_limit_go_out_once_each(alice, bob, shared_file):
    # The quick path (sharing.models.quick_downloads): on PostgreSQL its one
    # statement writes the deliveries, on SQLite the batch's outbox marks do.
    hook = endpoint(alice, ["downloaded", "resumed"])
    only_expired = endpoint(alice, ["expired"])
    endpoint(bob, ["downloaded", "resumed"])  # another owner's: never alice's downloads
    share = new_share(shared_file)
    assert share.count_download()
    resumed = share.reserve_bytes(first=1, end=shared_file.size)
    assert resumed is not None
    resumed.settle(resumed.end)
    events = list(ShareEvent.objects.filter(share=share, kind__in=["downloaded", "resumed"]).order_by("id"))
    assert [event.kind for event in events] == ["downloaded", "resumed"]
    rows = deliveries()
    assert [(row.endpoint_id, row.event_id) for row in rows] == [(hook.pk, event.pk) for event in events]
    assert [row.webhook_id for row in rows] == [webhook_id(event.pk, hook.pk) for event in events]
    assert not deliveries(endpoint=only_expired)


def test_a_rolled_back_change_leaves_no_delivery(alice, shared_file):
    endpoint(alice, ["created"])
    seen = []

    def change_then_fail():
        with transaction.atomic():
            new_share(shared_file)
            seen.append(len(deliveries()))  # written inside the transaction...
            raise RuntimeError

    with pytest.raises(RuntimeError):
        change_then_fail()
    assert seen == [1]
    assert deliveries() == []  # ...and gone with it
    assert not Share.objects.exists()


def test_no_endpoint_no_delivery(alice, shared_file):
    new_share(shared_file).unshare()
    assert ShareEvent.objects.count() == 2
    assert deliveries() == []


def test_the_daemons_expiry_sql_writes_the_deliveries_with_the_events(alice, bob, make_file, shared_file):
    hook = endpoint(alice, ["expired"])
    endpoint(bob, ["expired"])
    endpoint(alice, ["created"])
    bobs = make_file(bob)
    due = [new_share(shared_file, 0.05) for _ in range(3)]
    bobs_share = new_share(bobs, 0.05)
    later = new_share(shared_file, 3600)
    time.sleep(0.1)
    store = ShareStore()
    expired = store.expire([share.pk for share in [*due, later]], time.time())
    assert sorted(expired) == sorted(share.pk for share in due)
    rows = deliveries(endpoint=hook)
    assert sorted(row.share_id for row in rows) == sorted(expired)
    for row in rows:
        assert row.event.kind == ShareEvent.Kind.EXPIRED
        assert row.webhook_id == webhook_id(row.event_id, hook.pk)
        assert row.next_attempt_at == row.event.at == Share.objects.get(pk=row.share_id).ended_at
    # The batch path (ORDER BY ... LIMIT) too, and another owner's endpoint gets its own share only.
    assert store.expire_overdue(time.time(), 100) == [bobs_share.pk]
    assert [row.share_id for row in deliveries(endpoint__owner=bob)] == [bobs_share.pk]
    assert [row.event.kind for row in deliveries(share_id=later.pk)] == ["created"]


def test_the_daemons_expiry_without_endpoints_writes_events_only(alice, shared_file):
    due = [new_share(shared_file, 0.05) for _ in range(2)]
    time.sleep(0.1)
    assert sorted(ShareStore().expire([share.pk for share in due], time.time())) == sorted(s.pk for s in due)
    assert ShareEvent.objects.filter(kind=ShareEvent.Kind.EXPIRED).count() == 2
    assert deliveries() == []
