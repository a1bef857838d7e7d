"""The sending threads' database connections: one per thread, kept from one
send to the next, and closed when the webhook thread stops."""

import threading
from datetime import timedelta

import pytest
from django.db.backends.signals import connection_created
from django.utils import timezone

from sharing.models import Share
from tests.helpers import wait_until
from tests.webhook_receiver import Receiver
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.worker import WebhookThread


@pytest.mark.django_db(transaction=True)
def test_a_sender_keeps_its_connection_between_sends_and_closes_it_at_the_end(alice, make_file):
    receiver = Receiver()
    opened = []

    def note(sender, connection, **kwargs):
        if threading.current_thread().name.startswith("webhook-send"):
            opened.append(connection)

    connection_created.connect(note, weak=False, dispatch_uid="test-sender-connections")
    thread = WebhookThread(poll_interval=0.02, concurrency=1)
    try:
        WebhookEndpoint.objects.create(owner=alice, url=receiver.url, events=["created"])
        file = make_file(alice)
        for _ in range(5):
            Share.create_for(file=file, expires_at=timezone.now() + timedelta(hours=1))
        thread.start()
        assert wait_until(lambda: not WebhookDelivery.objects.filter(delivered_at__isnull=True).exists(), 20)
    finally:
        thread.stop()
        thread.join(15)
        connection_created.disconnect(dispatch_uid="test-sender-connections")
        receiver.close()
    assert not thread.is_alive()
    assert len(receiver.received) == 5
    assert len(opened) == 1  # five sends, one thread, one connection
    assert opened[0].connection is None  # closed when the thread stopped
