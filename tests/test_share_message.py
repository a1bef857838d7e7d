"""The owner's message to the recipient: set on a share (API and web page),
plain text on the link's page, bounded in length by the database itself."""

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from sharing.models import MESSAGE_MAX_LENGTH, Share, ShareEvent

pytestmark = pytest.mark.django_db

BROWSER = "text/html,application/xhtml+xml,*/*;q=0.8"


def page(share) -> str:
    return Client().get(reverse("public-share", args=[share.token]), HTTP_ACCEPT=BROWSER).content.decode()


def share_of(stored, **options) -> Share:
    return Share.create_for(file=stored, expires_at=timezone.now() + timedelta(hours=1), **options)


def test_a_share_made_with_a_message_shows_it_escaped_on_its_page(alice_client, make_file, alice):
    stored = make_file(alice)
    body = {"file": stored.pk, "expires_in": 3600, "message": "Hi Bob,\n<b>the</b> report & more"}
    response = alice_client.post("/api/shares/", body, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["message"] == "Hi Bob,\n<b>the</b> report & more"
    text = page(Share.objects.get())
    assert "A message from alice:" in text
    assert "<blockquote>Hi Bob,<br>&lt;b&gt;the&lt;/b&gt; report &amp; more</blockquote>" in text


def test_the_page_of_a_share_without_a_message_shows_none(alice, make_file):
    assert 'class="owner-message"' not in page(share_of(make_file(alice)))


def test_without_the_owners_name_the_message_is_from_the_sender(alice, make_file, settings):
    settings.LINK_SHOWS_OWNER = False
    text = page(share_of(make_file(alice), message="hello"))
    assert "A message from the sender:" in text
    assert "alice" not in text


def test_a_locked_or_ended_link_does_not_show_its_message(alice, make_file):
    locked = share_of(make_file(alice), password="pw", message="secret note")
    assert "secret note" not in page(locked)
    ended = share_of(make_file(alice), message="old note")
    ended.unshare()
    assert "old note" not in page(ended)


@pytest.mark.parametrize(
    ("message", "says"),
    [
        ("x" * (MESSAGE_MAX_LENGTH + 1), "no more than 1000 characters"),
        (12, "Must be a string."),
        (None, "This field may not be null."),
        ("nul\x00byte", "Null characters are not allowed."),
    ],
)
def test_a_message_that_is_too_long_or_not_text_is_refused_naming_it(alice_client, alice, make_file, message, says):
    stored = make_file(alice)
    response = alice_client.post(
        "/api/shares/", {"file": stored.pk, "expires_in": 60, "message": message}, format="json"
    )
    assert response.status_code == 400
    assert says in response.json()["message"][0]
    assert not Share.objects.exists()


def test_the_longest_message_is_kept_whole(alice_client, alice, make_file):
    note = "é" * MESSAGE_MAX_LENGTH  # characters, not bytes
    response = alice_client.post(
        "/api/shares/", {"file": make_file(alice).pk, "expires_in": 60, "message": note}, format="json"
    )
    assert response.status_code == 201
    assert Share.objects.get().message == note


def test_the_database_refuses_a_longer_message_written_around_the_api(alice, make_file):
    share = share_of(make_file(alice))
    with pytest.raises(IntegrityError), transaction.atomic():
        Share.objects.filter(pk=share.pk).update(message="x" * (MESSAGE_MAX_LENGTH + 1))


def test_patch_sets_changes_and_removes_the_message_and_the_history_says_which(alice_client, alice, make_file):
    share = share_of(make_file(alice))
    for note in ("first", "second", ""):
        response = alice_client.patch(f"/api/shares/{share.pk}/", {"message": note}, format="json")
        assert response.status_code == 200, response.content
        assert response.json()["message"] == note
    share.refresh_from_db()
    assert share.message == ""
    changes = [event.details for event in share.events.filter(kind=ShareEvent.Kind.CHANGED).order_by("id")]
    assert changes == [{"message": "set"}, {"message": "changed"}, {"message": "removed"}]  # never the text


def test_the_share_page_takes_a_message_and_refuses_a_long_one(alice_web, alice, make_file):
    stored = make_file(alice)
    url = f"/files/{stored.pk}/share/"
    fields = {"lifetime": "3600", "time_zone": "UTC", "remind_before_expiry": "on"}
    refused = alice_web.post(url, {**fields, "message": "y" * (MESSAGE_MAX_LENGTH + 1)})
    assert refused.status_code == 400
    assert "at most 1000 characters" in refused.content.decode()
    assert not Share.objects.exists()
    made = alice_web.post(url, {**fields, "message": "See you soon"})
    assert made.status_code == 302
    share = Share.objects.get()
    assert share.message == "See you soon"
    assert "See you soon" in alice_web.get(made["Location"]).content.decode()  # the owner's page shows it
