"""Real worker processes: runwebhooks killed mid-delivery, runexpiry sending
deliveries (and not with --no-webhooks), and the PostgreSQL acceptance run:
three runexpiry daemons over 5,000 shares, one SIGKILLed mid-run."""

import time
from collections import Counter

import pytest
from django.db import connection
from django.utils import timezone

from sharing.models import Share, ShareEvent
from tests.helpers import bulk_shares, create_share, kill, report, start_manage, stop, wait_for_text, wait_until
from tests.webhook_receiver import Receiver
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.signing import verify

pytestmark = [pytest.mark.fault, pytest.mark.django_db(transaction=True)]

# Compressed for the test: a killed worker's claim lapses after 2 s.
FAST = {"WEBHOOK_CLAIM_SECONDS": "2", "WEBHOOK_POLL_INTERVAL": "0.05", "WEBHOOK_TIMEOUT": "1.5"}


@pytest.fixture
def receiver():
    receiver = Receiver()
    yield receiver
    receiver.close()


def pending() -> int:
    return WebhookDelivery.objects.filter(delivered_at__isnull=True).count()


@pytest.mark.timeout(90)
def test_a_worker_killed_mid_delivery_leads_to_a_redelivery(alice, shared_file, receiver, tmp_path):
    endpoint = WebhookEndpoint.objects.create(owner=alice, url=receiver.url, events=["created"])
    receiver.hold = True  # the first request is held: the worker is mid-delivery
    create_share(shared_file, 3600)
    first = start_manage("runwebhooks", output=tmp_path / "first.out", **FAST)
    try:
        assert receiver.holding.wait(30), (tmp_path / "first.out").read_text()
        kill(first)
    finally:
        stop(first)
    receiver.hold = False
    receiver.release.set()
    delivery = WebhookDelivery.objects.get()
    assert delivery.delivered_at is None
    assert delivery.claimed_until is not None  # still claimed by the dead worker
    second = start_manage("runwebhooks", output=tmp_path / "second.out", **FAST)
    try:
        assert wait_until(lambda: pending() == 0, 30), (tmp_path / "second.out").read_text()
    finally:
        stop(second)
    assert second.returncode == 0
    delivery.refresh_from_db()
    assert delivery.attempts == 1  # the killed attempt left no record; the redelivery did
    assert receiver.ids() == [delivery.webhook_id] * 2
    for request in receiver.received:
        verify(endpoint.secret, request.headers, request.body, now=time.time())
    # Not before the dead worker's lease lapsed.
    assert delivery.delivered_at >= delivery.event.at


@pytest.mark.timeout(90)
@pytest.mark.parametrize("webhooks", [True, False], ids=["default", "no-webhooks"])
def test_runexpiry_sends_the_expiry_webhooks_unless_told_not_to(alice, shared_file, receiver, tmp_path, webhooks):
    WebhookEndpoint.objects.create(owner=alice, url=receiver.url, events=["expired"])
    output = tmp_path / "daemon.out"
    options = [] if webhooks else ["--no-webhooks"]
    daemon = start_manage("runexpiry", "--pickup-interval", "0.05", *options, output=output, **FAST)
    try:
        wait_for_text(output, "refresh:", 30, process=daemon)
        shares = [create_share(shared_file, 0.3 + i * 0.05) for i in range(5)]
        ids = [share.pk for share in shares]
        assert wait_until(lambda: not Share.objects.filter(pk__in=ids, status="active").exists(), 20)
        if webhooks:
            assert wait_until(lambda: pending() == 0, 20), output.read_text()
        else:
            time.sleep(1)  # twenty poll intervals: a worker would have sent them
    finally:
        stop(daemon)
    assert daemon.returncode == 0, output.read_text()
    assert WebhookDelivery.objects.filter(share_id__in=ids).count() == 5
    if webhooks:
        assert sorted(request.json["data"]["share_id"] for request in receiver.received) == sorted(ids)
    else:
        assert pending() == 5
        assert receiver.received == []


@pytest.mark.postgres
@pytest.mark.timeout(420)
def test_postgresql_three_daemons_5000_shares_one_killed_one_event_and_one_delivery_each(
    alice, shared_file, receiver, tmp_path, capsys
):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL")
    endpoint = WebhookEndpoint.objects.create(owner=alice, url=receiver.url, events=["expired"])
    count, spread = 5000, 4.0
    # Far enough ahead for three daemons to start on a loaded machine (two
    # test processes share two cores): the kill must come mid-run.
    due = bulk_shares(shared_file, [i * spread / count for i in range(count)], start_in=15)
    kept = bulk_shares(shared_file, [0.0] * 200, start_in=3600)  # must not expire nor be delivered
    outputs = [tmp_path / f"daemon{n}.out" for n in range(3)]
    daemons = [start_manage("runexpiry", "--pickup-interval", "0.05", output=path, **FAST) for path in outputs]
    killed = daemons[0]
    try:
        for daemon, path in zip(daemons, outputs, strict=True):
            wait_for_text(path, "refresh:", 30, process=daemon)
        first_due = Share.objects.get(pk=due[0]).expires_at
        assert timezone.now() < first_due, "the daemons took longer to start than the shares had before their deadlines"
        expired = Share.objects.filter(pk__in=due, status=Share.Status.EXPIRED)
        assert wait_until(lambda: expired.count() >= count // 3, 30, 0.01)
        kill(killed)  # mid-run: expiring, and sending
        at_kill = expired.count()
        assert at_kill < count, "the run was over before the kill"
        assert wait_until(lambda: expired.count() == count, 60, 0.05), expired.count()
        all_expired = time.monotonic()
        # A liveness bound, not a speed target: two daemons send 5,000 to a
        # one-threaded receiver while the other test process shares the cores.
        assert wait_until(lambda: pending() == 0, 240, 0.1), pending()
        drained_s = time.monotonic() - all_expired
    finally:
        for daemon in daemons:
            stop(daemon)
    assert [daemon.returncode for daemon in daemons[1:]] == [0, 0], [path.read_text() for path in outputs[1:]]

    low, high = min(due), max(kept)
    events = ShareEvent.objects.filter(kind=ShareEvent.Kind.EXPIRED, share_id__gte=low, share_id__lte=high)
    event_counts = Counter(events.values_list("share_id", flat=True))
    assert sorted(event_counts) == sorted(due)
    assert set(event_counts.values()) == {1}
    rows = WebhookDelivery.objects.filter(share_id__range=(low, high)).values_list("share_id", "webhook_id", "event_id")
    delivery_counts = Counter(share_id for share_id, _, _ in rows)
    assert sorted(delivery_counts) == sorted(due), "a delivery is missing, or one is for a share that did not expire"
    assert set(delivery_counts.values()) == {1}
    assert {event_id for _, _, event_id in rows} == set(events.values_list("id", flat=True))
    assert not Share.objects.filter(pk__in=kept).exclude(status=Share.Status.ACTIVE).exists()
    # At least once: every delivery id reached the receiver; a repeat only for
    # a send the kill cut short, or for an attempt recorded as failed that the
    # receiver got anyway (a timeout on a loaded machine: the answer came late).
    received = Counter(receiver.ids())
    assert set(received) == {webhook_id for _, webhook_id, _ in rows}
    repeats = sum(n - 1 for n in received.values())
    attempts = WebhookDelivery.objects.filter(share_id__range=(low, high)).values_list("attempts", flat=True)
    failed_attempts = sum(n - 1 for n in attempts)
    assert repeats <= 1 + failed_attempts, f"{repeats} repeats, {failed_attempts} failed attempts"
    first = receiver.received[0]
    verify(endpoint.secret, first.headers, first.body, now=int(first.headers["webhook-timestamp"]))
    report(
        capsys,
        "3 daemons, 5000 shares, one killed",
        expired_at_kill=at_kill,
        deliveries=len(rows),
        received=sum(received.values()),
        repeats=repeats,
        failed_attempts=failed_attempts,
        drained_after_last_expiry_s=round(drained_s, 1),
    )
