"""The webhook thread's idle looks on SQLite: with nothing pending and no
commit by another connection since its last look, a look is one pragma, not
the claim query; any commit makes it look in full again, so no delivery waits
longer than a poll interval."""

from datetime import timedelta

import pytest
from django.db import connection  # noqa: F401 -- read by the skipif condition
from django.utils import timezone

from sharing.models import Share
from tests.helpers import wait_until
from tests.webhook_receiver import Receiver
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.worker import WebhookThread

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif("connection.vendor != 'sqlite'", reason="SQLite's data_version"),
]


@pytest.fixture
def receiver():
    receiver = Receiver()
    yield receiver
    receiver.close()


@pytest.fixture
def thread():
    thread = WebhookThread(poll_interval=0.02)
    thread.start()
    yield thread
    thread.stop()
    thread.join(5)


def test_an_idle_thread_skips_its_claim_query(thread):
    assert wait_until(lambda: thread.skipped >= 5, 5)
    assert thread.worker.sent == 0


def test_a_delivery_committed_while_idle_is_sent(alice, shared_file, receiver, thread):
    assert wait_until(lambda: thread.skipped >= 3, 5)
    WebhookEndpoint.objects.create(owner=alice, url=receiver.url, events=["created"])
    share = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1))
    assert wait_until(lambda: thread.worker.sent == 1, 5)
    assert WebhookDelivery.objects.get().share_id == share.pk
    assert wait_until(lambda: thread.skipped >= 6, 5)  # idle again once delivered


def test_a_pending_retry_keeps_the_thread_looking(alice, shared_file, thread):
    endpoint = WebhookEndpoint.objects.create(owner=alice, url="http://127.0.0.1:9/", events=["created"])
    Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1))
    # Pending, due only later: the clock alone will make it due, without a commit.
    WebhookDelivery.objects.filter(endpoint=endpoint).update(next_attempt_at=timezone.now() + timedelta(hours=1))
    skipped = thread.skipped
    assert wait_until(lambda: thread.worker.idle_mark is None, 5)
    assert not wait_until(lambda: thread.skipped > skipped + 2, 0.3)
