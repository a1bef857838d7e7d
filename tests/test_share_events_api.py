"""GET /api/shares/{id}/events/ and the admin's read-only history."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from sharing.models import Share, ShareEvent, Visitor, expire_shares

EVENT_FIELDS = [
    "id",
    "kind",
    "at",
    "old_expires_at",
    "expires_at",
    "lateness_ms",
    "bytes",
    "client_address",
    "user_agent",
    "details",
]


def events_url(share) -> str:
    return f"/api/shares/{share.pk}/events/"


@pytest.fixture
def share(shared_file):
    return Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1))


@pytest.mark.django_db
def test_the_owner_reads_the_history_oldest_first(alice_client, share):
    old = share.expires_at
    share.set_expiry(old + timedelta(hours=1))
    share.count_download(visitor=Visitor("192.0.2.200", "curl/8"))  # the 13-byte file
    share.unshare()

    response = alice_client.get(events_url(share))
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 4
    results = body["results"]
    assert [event["kind"] for event in results] == ["created", "renewed", "downloaded", "unshared"]
    assert all(list(event) == EVENT_FIELDS for event in results)
    renewed, downloaded = results[1], results[2]
    assert renewed["old_expires_at"] == old.isoformat().replace("+00:00", "Z")
    assert (downloaded["bytes"], downloaded["client_address"], downloaded["user_agent"]) == (13, "192.0.2.0", "curl/8")
    assert results[0]["details"] == {"max_downloads": None, "password": False, "message": False}
    assert results[3]["lateness_ms"] is None


@pytest.mark.django_db
def test_an_expiry_shows_its_lateness_in_milliseconds(alice_client, share):
    expire_shares([share.pk], share.expires_at + timedelta(microseconds=12_500))
    (expired,) = [e for e in alice_client.get(events_url(share)).json()["results"] if e["kind"] == "expired"]
    assert expired["lateness_ms"] == 12.5


@pytest.mark.django_db
def test_the_history_is_paginated(alice_client, share):
    for n in range(7):
        share.reserve_bytes(first=0, end=n)  # a response of n bytes
    first = alice_client.get(events_url(share), {"page_size": 3}).json()
    assert first["count"] == 8
    assert len(first["results"]) == 3
    assert first["previous"] is None
    pages = [first["results"]]
    page = first
    while page["next"]:
        page = alice_client.get(page["next"]).json()
        pages.append(page["results"])
    ids = [event["id"] for results in pages for event in results]
    assert [len(results) for results in pages] == [3, 3, 2]
    assert ids == sorted(ids)  # oldest first, nothing repeated or lost
    assert [event["bytes"] for results in pages for event in results][1:] == list(range(7))
    assert alice_client.get(events_url(share), {"page": 9}).status_code == 404


@pytest.mark.django_db
def test_another_users_share_is_a_404_like_a_missing_one(bob_client, alice_client, share):
    assert bob_client.get(events_url(share)).status_code == 404
    assert alice_client.get("/api/shares/999999/events/").status_code == 404


@pytest.mark.django_db
def test_share_filters_do_not_apply_to_the_history(alice_client, share):
    share.unshare()
    response = alice_client.get(events_url(share), {"status": "active", "file": "0"})
    assert response.status_code == 200
    assert response.json()["count"] == 2


def test_anonymous_requests_are_refused(anon_client, db):
    assert anon_client.get("/api/shares/1/events/").status_code == 401


# --- admin ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_share_page_shows_its_recent_history(admin_client, share):
    share.count_download(visitor=Visitor("2001:db8:5:6::1", "Agent/<script>"))
    response = admin_client.get(reverse("admin:sharing_share_change", args=[share.pk]))
    assert response.status_code == 200
    page = response.content.decode()
    assert "All 2 events" in page
    assert "2001:db8:5::" in page
    assert "Agent/&lt;script&gt;" in page  # escaped


@pytest.mark.django_db
def test_the_event_list_is_read_only_and_searchable(admin_client, share, shared_file):
    other = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=2))
    other.unshare()
    changelist = reverse("admin:sharing_shareevent_changelist")
    response = admin_client.get(changelist)
    assert response.status_code == 200
    assert response.context["cl"].result_count == 3

    by_share = admin_client.get(changelist, {"share__id__exact": share.pk})
    assert by_share.context["cl"].result_count == 1
    by_kind = admin_client.get(changelist, {"kind__exact": "unshared"})
    assert [e.share_id for e in by_kind.context["cl"].result_list] == [other.pk]
    by_token = admin_client.get(changelist, {"q": other.token})
    assert by_token.context["cl"].result_count == 2
    for nonsense in ["2001:zz::1", "not an address", "%", "9" * 40]:
        assert admin_client.get(changelist, {"q": nonsense}).status_code == 200

    event = ShareEvent.objects.filter(share=share).get()
    detail = admin_client.get(reverse("admin:sharing_shareevent_change", args=[event.pk]))
    assert detail.status_code == 200
    assert b'type="submit"' not in detail.content.split(b'id="content-main"')[1].split(b"</form>")[0]
    assert admin_client.get(reverse("admin:sharing_shareevent_add")).status_code == 403
    assert admin_client.post(reverse("admin:sharing_shareevent_delete", args=[event.pk])).status_code == 403
    assert (
        admin_client.post(reverse("admin:sharing_shareevent_change", args=[event.pk]), {"kind": "x"}).status_code == 403
    )
    assert ShareEvent.objects.filter(pk=event.pk, kind="created").exists()
