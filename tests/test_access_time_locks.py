"""The time that decides is read once the lock is held (hardening, item 2).

A request that waits for a lock across a share's deadline must be judged by
the time after the wait: on SQLite another connection holding the write lock
(BEGIN IMMEDIATE), on PostgreSQL another transaction holding the share's row.
Before the fix, a GET sent 0.2 s before the deadline was served in full
747 ms after it.
"""

import threading
import time
from datetime import timedelta

import pytest
from django.db import connections
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from sharing.models import Share, delete_file
from tests.helpers import HeldLock, create_share

pytestmark = pytest.mark.django_db(transaction=True)

LEAD = 0.6  # seconds from the request's start to the deadline: room to reach the lock


def while_locked(share: Share, request, hold_for: float):
    """Start `request` (in a thread, with its own connection) while another
    client holds the lock, release it `hold_for` seconds later, and return
    what the request returned."""
    result = {}

    def run():
        try:
            result["value"] = request()
        finally:
            connections.close_all()

    with HeldLock(share):
        worker = threading.Thread(target=run)
        worker.start()
        time.sleep(hold_for)
        assert worker.is_alive(), "the request did not wait for the lock"
    worker.join(30)
    return result["value"]


def across_the_deadline(share: Share, request):
    """Run `request` before `share`'s deadline and keep it waiting for the
    lock until 0.2 s after the deadline."""
    return while_locked(share, request, (share.expires_at - timezone.now()).total_seconds() + 0.2)


def test_a_download_that_waited_for_the_lock_past_the_deadline_is_refused(shared_file):
    share = create_share(shared_file, LEAD)
    response = across_the_deadline(share, lambda: Client().get(reverse("public-share", args=[share.token])))
    assert response.status_code == 410
    share.refresh_from_db()
    assert share.download_count == 0


def test_a_renewal_that_waited_for_the_lock_past_the_deadline_does_not_resurrect(alice, shared_file):
    share = create_share(shared_file, LEAD)

    def renew():
        client = APIClient()
        client.force_authenticate(alice)
        return client.patch(f"/api/shares/{share.pk}/", {"expires_in": 3600}, format="json")

    response = across_the_deadline(share, renew)
    assert response.status_code == 409, response.content
    share.refresh_from_db()
    assert share.effective_status() == Share.Status.EXPIRED


def test_an_unshare_that_waited_past_the_deadline_leaves_the_expiry_standing(shared_file):
    share = create_share(shared_file, LEAD)
    assert across_the_deadline(share, lambda: Share.objects.get(pk=share.pk).unshare()) is False
    share.refresh_from_db()
    assert share.status == Share.Status.ACTIVE  # the daemon marks it expired; it was never unshared
    assert share.effective_status() == Share.Status.EXPIRED


def test_a_download_that_waited_but_was_still_in_time_is_served(shared_file):
    share = create_share(shared_file, 30)

    response = while_locked(share, lambda: Client().get(reverse("public-share", args=[share.token])), 0.3)
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"hello, world\n"
    share.refresh_from_db()
    assert share.total_downloads == 1


def test_deleting_a_file_records_a_share_past_its_deadline_as_expired(shared_file):
    overdue = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(milliseconds=50))
    live = create_share(shared_file, 60)
    time.sleep(0.1)
    assert delete_file(shared_file) == 1  # only the live one was unshared
    overdue.refresh_from_db()
    live.refresh_from_db()
    assert (overdue.status, overdue.end_reason) == (Share.Status.EXPIRED, Share.EndReason.EXPIRED)
    assert overdue.ended_at >= overdue.expires_at
    assert (live.status, live.end_reason) == (Share.Status.UNSHARED, Share.EndReason.FILE_DELETED)
