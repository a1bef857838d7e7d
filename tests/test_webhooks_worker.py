"""The delivery worker against a real local receiver: retries with back-off
and the same webhook-id, valid signatures, per-share order, the retry window,
claims that lapse, and private targets refused at send time. The worker's
clock is injected, so hours of back-off take no time."""

from datetime import timedelta

import pytest
from django.utils import timezone

from sharing.models import Share
from tests.webhook_receiver import Receiver
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.signing import verify
from webhooks.worker import DeliveryWorker, backoff

pytestmark = pytest.mark.django_db


class NoJitter:
    """An rng whose jitter is none: the back-off exactly."""

    def random(self) -> float:
        return 0.0


class Clock:
    def __init__(self):
        self.now = timezone.now() + timedelta(seconds=1)

    def __call__(self):
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def receiver():
    receiver = Receiver()
    yield receiver
    receiver.close()


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture(autouse=True)
def quick_retries(settings):
    settings.WEBHOOK_RETRY_BASE = 10
    settings.WEBHOOK_RETRY_MAX = 600
    settings.WEBHOOK_RETRY_WINDOW = 86400
    settings.WEBHOOK_TIMEOUT = 2


def hook(owner, receiver, events=("created", "unshared")):
    return WebhookEndpoint.objects.create(owner=owner, url=receiver.url, events=list(events))


def new_share(stored_file):
    return Share.create_for(file=stored_file, expires_at=timezone.now() + timedelta(hours=1))


def drain(worker, clock, step=3600.0, rounds=20) -> None:
    """Run the worker until nothing is pending, moving the clock past each back-off."""
    for _ in range(rounds):
        while worker.run_once():
            pass
        if not WebhookDelivery.objects.filter(delivered_at__isnull=True).exists():
            return
        clock.advance(step)


def test_a_receiver_failing_three_times_gets_the_event_on_the_fourth_same_id_valid_signature(
    alice, shared_file, receiver, clock
):
    receiver.answer = lambda n: 503 if n <= 3 else 204
    endpoint = hook(alice, receiver)
    share = new_share(shared_file)
    delivery = WebhookDelivery.objects.get()
    worker = DeliveryWorker(clock=clock, rng=NoJitter())
    for attempt in range(1, 4):
        assert worker.run_once()
        delivery.refresh_from_db()
        assert delivery.attempts == attempt
        assert delivery.last_status == 503
        assert delivery.next_attempt_at == clock.now + backoff(attempt)  # 10, 20, 40 s
        assert not worker.run_once(), "retried before its back-off"
        clock.advance(backoff(attempt).total_seconds())
    assert worker.run_once()
    delivery.refresh_from_db()
    assert delivery.delivered_at == clock.now
    assert (delivery.attempts, delivery.last_status, delivery.last_error) == (4, 204, "")
    assert [backoff(n).total_seconds() for n in (1, 2, 3, 10)] == [10, 20, 40, 600]

    assert len(receiver.received) == 4
    assert set(receiver.ids()) == {delivery.webhook_id}
    for request in receiver.received:
        verify(endpoint.secret, request.headers, request.body, now=int(request.headers["webhook-timestamp"]))
        assert request.headers["content-type"] == "application/json"
        assert request.json == receiver.received[0].json
    body = receiver.received[0].json
    assert body["type"] == "share.created"
    assert body["data"]["share_id"] == share.pk
    assert body["data"]["kind"] == "created"
    assert body["data"]["id"] == delivery.event_id
    assert delivery.payload == body


def test_a_share_s_events_arrive_in_order_while_other_shares_go_ahead(alice, shared_file, receiver, clock):
    receiver.answer = lambda n: 500 if n == 1 else 200
    hook(alice, receiver)
    first = new_share(shared_file)
    first.unshare()
    second = new_share(shared_file)
    drain(DeliveryWorker(clock=clock), clock)
    sent = [(request.json["data"]["share_id"], request.json["type"]) for request in receiver.received]
    assert sent == [
        (first.pk, "share.created"),  # failed: first.unshared waits behind it
        (second.pk, "share.created"),
        (first.pk, "share.created"),
        (first.pk, "share.unshared"),
    ]


def test_after_the_retry_window_the_endpoint_is_failing_until_re_enabled(alice, shared_file, receiver, clock, settings):
    settings.WEBHOOK_RETRY_WINDOW = 3600
    receiver.answer = lambda n: 500
    endpoint = hook(alice, receiver)
    new_share(shared_file)
    worker = DeliveryWorker(clock=clock)
    first_failure = clock.now
    for _ in range(50):
        if not worker.run_once():
            clock.advance(600)
        endpoint.refresh_from_db()
        if endpoint.state == WebhookEndpoint.State.FAILING:
            break
    assert endpoint.state == WebhookEndpoint.State.FAILING
    assert endpoint.failing_since == clock.now
    assert timedelta(hours=1) <= clock.now - first_failure < timedelta(hours=1, minutes=11)
    attempts = len(receiver.received)
    clock.advance(86400)
    assert not worker.run_once(), "sent to a failing endpoint"
    new_share(shared_file)  # and a failing endpoint gets no new deliveries
    assert WebhookDelivery.objects.count() == 1
    assert len(receiver.received) == attempts

    receiver.answer = lambda n: 204
    endpoint.reactivate()
    worker.clock = timezone.now
    assert worker.run_once()
    delivery = WebhookDelivery.objects.get()
    assert delivery.delivered_at is not None
    assert delivery.first_failed_at is None
    assert len(set(receiver.ids())) == 1


def test_a_lapsed_claim_is_taken_over_and_the_first_worker_cannot_undo_it(
    alice, shared_file, receiver, clock, settings
):
    settings.WEBHOOK_CLAIM_SECONDS = 30
    hook(alice, receiver)
    new_share(shared_file)
    stalled, other = DeliveryWorker(clock=clock), DeliveryWorker(clock=clock)
    delivery_id, until, _ = stalled.claim()  # ... and never finishes (killed, or stuck)
    assert other.claim() is None
    clock.advance(29)
    assert other.claim() is None
    clock.advance(1)
    assert other.run_once()
    delivery = WebhookDelivery.objects.get(pk=delivery_id)
    assert delivery.delivered_at is not None
    # The stalled worker's late failure changes nothing; its late success neither.
    stalled._failed(delivery, until, 500, "late", {})
    delivery.refresh_from_db()
    assert (delivery.attempts, delivery.last_status) == (1, 204)
    assert len(receiver.received) == 1


def test_a_timeout_and_a_redirect_are_failures(alice, shared_file, receiver, clock, settings):
    settings.WEBHOOK_TIMEOUT = 0.3
    receiver.hold = True  # the first request is never answered in time
    receiver.answer = lambda n: 302 if n == 2 else 200
    hook(alice, receiver)
    new_share(shared_file)
    worker = DeliveryWorker(clock=clock)
    assert worker.run_once()
    delivery = WebhookDelivery.objects.get()
    assert delivery.last_status is None
    assert "timed out" in delivery.last_error.lower()
    receiver.hold = False
    receiver.release.set()
    clock.advance(3600)
    assert worker.run_once()
    delivery.refresh_from_db()
    assert (delivery.attempts, delivery.last_status, delivery.delivered_at) == (2, 302, None)
    clock.advance(3600)
    assert worker.run_once()
    delivery.refresh_from_db()
    assert delivery.delivered_at is not None


def test_a_private_target_is_refused_again_at_send_time(alice, shared_file, receiver, clock, settings):
    hook(alice, receiver)  # registered while private targets were allowed
    new_share(shared_file)
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    assert DeliveryWorker(clock=clock).run_once()
    delivery = WebhookDelivery.objects.get()
    assert delivery.delivered_at is None
    assert "127.0.0.1" in delivery.last_error
    assert "public addresses" in delivery.last_error
    assert receiver.received == []


def test_retries_are_jittered_up_to_a_quarter_more(alice, shared_file, receiver, clock):
    """Endpoints that failed together do not all come back in the same second."""
    receiver.answer = lambda n: 503
    hook(alice, receiver)
    for _ in range(8):
        new_share(shared_file)
    worker = DeliveryWorker(clock=clock)
    while worker.run_once():
        pass
    waits = {(d.next_attempt_at - clock.now).total_seconds() for d in WebhookDelivery.objects.all()}
    assert len(waits) > 1  # not all the same
    assert all(10 <= wait <= 12.5 for wait in waits)


@pytest.mark.parametrize(("retry_after", "wait"), [("120", 120), ("3", 10), ("99999", 600), ("soon", 10)])
def test_retry_after_is_honoured_within_bounds(alice, shared_file, receiver, clock, retry_after, wait):
    """Longer than the back-off: waited; shorter: the back-off; past the
    maximum: the maximum; not understood: ignored."""
    receiver.answer = lambda n: 503
    receiver.extra_headers = lambda n: {"Retry-After": retry_after}
    hook(alice, receiver)
    new_share(shared_file)
    assert DeliveryWorker(clock=clock, rng=NoJitter()).run_once()
    delivery = WebhookDelivery.objects.get()
    assert delivery.next_attempt_at == clock.now + timedelta(seconds=wait)


def test_retry_after_as_an_http_date(alice, shared_file, receiver, clock):
    receiver.answer = lambda n: 429
    when = clock.now + timedelta(seconds=300)
    receiver.extra_headers = lambda n: {"Retry-After": when.strftime("%a, %d %b %Y %H:%M:%S GMT")}
    hook(alice, receiver)
    new_share(shared_file)
    assert DeliveryWorker(clock=clock, rng=NoJitter()).run_once()
    wait = (WebhookDelivery.objects.get().next_attempt_at - clock.now).total_seconds()
    assert 299 <= wait <= 300  # the date has whole seconds


def test_a_410_disables_the_endpoint_at_once(alice, shared_file, receiver, clock):
    receiver.answer = lambda n: 410
    endpoint = hook(alice, receiver)
    new_share(shared_file)
    worker = DeliveryWorker(clock=clock)
    assert worker.run_once()
    endpoint.refresh_from_db()
    assert (endpoint.state, endpoint.failing_since) == (WebhookEndpoint.State.FAILING, clock.now)
    new_share(shared_file)
    clock.advance(3600)
    assert not worker.run_once()  # nothing goes to a disabled endpoint
    assert len(receiver.received) == 1
