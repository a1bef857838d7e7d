"""sharing.rows.insert_skipping_save: fast INSERTs that never bypass a receiver.

Shares and their events are inserted without save() on the create path; a
receiver of pre_save or post_save added later (by this project or another
app) must still be called, so the fast path steps aside when one listens."""

from datetime import timedelta

import pytest
from django.db.models.signals import post_save, pre_save
from django.utils import timezone

from sharing.models import Share, ShareEvent


def create(stored) -> Share:
    return Share.create_for(file=stored, expires_at=timezone.now() + timedelta(hours=1))


@pytest.mark.parametrize("signal", [pre_save, post_save], ids=["pre_save", "post_save"])
def test_a_receiver_of_a_share_or_event_save_is_called_on_the_create_path(shared_file, signal):
    seen = []

    def receiver(sender, instance, **kwargs):
        seen.append((sender, kwargs.get("created", True)))

    signal.connect(receiver, sender=Share, dispatch_uid="test-rows-share")
    signal.connect(receiver, sender=ShareEvent, dispatch_uid="test-rows-event")
    try:
        share = create(shared_file)
    finally:
        signal.disconnect(sender=Share, dispatch_uid="test-rows-share")
        signal.disconnect(sender=ShareEvent, dispatch_uid="test-rows-event")
    assert seen == [(Share, True), (ShareEvent, True)]
    assert Share.objects.filter(pk=share.pk).exists()
    assert share.events.get().kind == ShareEvent.Kind.CREATED


def test_with_no_receiver_the_create_path_skips_save(shared_file, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("save() was called")

    monkeypatch.setattr(Share, "save", refuse)
    monkeypatch.setattr(ShareEvent, "save", refuse)
    share = create(shared_file)
    assert Share.objects.get(pk=share.pk).events.count() == 1
