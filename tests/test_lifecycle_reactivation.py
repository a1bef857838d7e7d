"""Reactivation: POST /api/shares/{id}/reactivate/ brings an ended share back
at the same URL (Share.reactivate: one conditional UPDATE under the lock)."""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from sharing.models import ReactivationRefused, Share, ShareEvent, SharingPolicy, delete_file, expire_shares, reactivate
from tests.helpers import create_share, in_threads, start_manage, stop, wait_for_text, wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def url(share: Share) -> str:
    return f"/api/shares/{share.pk}/reactivate/"


def ended(shared_file, **limits) -> Share:
    share = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1), **limits)
    share.unshare()
    return share


def expired_by_time(shared_file) -> Share:
    share = create_share(shared_file, 0.05)
    expire_shares([share.pk], timezone.now() + timedelta(seconds=1))
    share.refresh_from_db()
    assert share.status == Share.Status.EXPIRED
    return share


def test_an_expired_share_works_again_at_the_same_url(alice_client, anon_client, shared_file):
    share = expired_by_time(shared_file)
    assert anon_client.get(f"/s/{share.token}/download").status_code != 200

    response = alice_client.post(url(share), {"expires_in": 600}, format="json")

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["id"], body["token"], body["status"]) == (share.pk, share.token, "active")
    assert body["ended_at"] is None
    assert body["end_reason"] is None
    deadline = timezone.datetime.fromisoformat(body["expires_at"])
    assert timedelta(seconds=590) < deadline - timezone.now() <= timedelta(seconds=600)
    download = anon_client.get(f"/s/{share.token}/download")
    assert download.status_code == 200
    assert b"".join(download.streaming_content) == b"hello, world\n"


def test_an_unshared_share_comes_back_with_the_default_lifetime(alice_client, shared_file):
    share = ended(shared_file)
    response = alice_client.post(url(share), {}, format="json")
    assert response.status_code == 200, response.content
    share.refresh_from_db()
    assert share.status == Share.Status.ACTIVE
    # Resolved as for a new share, just before the lock (updated_at is under it).
    lifetime = share.expires_at - share.updated_at
    default = SharingPolicy.current().default_lifetime
    assert default - timedelta(seconds=1) < lifetime <= default


def test_the_event_records_the_reactivation(alice_client, shared_file):
    share = ended(shared_file)
    old_deadline = share.expires_at
    response = alice_client.post(url(share), {"expires_in": 60, "reset_downloads": True}, format="json")
    assert response.status_code == 200
    share.refresh_from_db()
    event = share.events.get(kind=ShareEvent.Kind.REACTIVATED)
    assert (event.old_expires_at, event.expires_at, event.at) == (old_deadline, share.expires_at, share.updated_at)
    assert event.details == {"reset_downloads": True, "was": "unshared", "download_count": 0}
    kinds = list(share.events.order_by("at", "id").values_list("kind", flat=True))
    assert kinds == ["created", "unshared", "reactivated"]
    listed = alice_client.get(f"/api/shares/{share.pk}/events/").json()["results"]
    assert listed[-1]["kind"] == "reactivated"


def test_an_active_share_past_its_deadline_is_recorded_expired_then_reactivated(shared_file):
    share = create_share(shared_file, 0.05)
    wait_until(lambda: timezone.now() > share.expires_at, 2)
    reactivate(share, timezone.now() + timedelta(minutes=5))
    share.refresh_from_db()
    assert share.status == Share.Status.ACTIVE
    kinds = list(share.events.order_by("at", "id").values_list("kind", flat=True))
    assert kinds == ["created", "expired", "reactivated"]
    assert share.events.get(kind="expired").lateness > timedelta(0)
    assert share.events.get(kind="reactivated").details["was"] == "expired"


def test_a_used_up_share_needs_its_count_reset_or_a_higher_limit(alice_client, shared_file):
    share = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1), max_downloads=1)
    assert share.count_download()

    refused = alice_client.post(url(share), {"expires_in": 60}, format="json")
    assert refused.status_code == 409
    assert "reset_downloads" in refused.json()["detail"]
    assert alice_client.post(url(share), {"expires_in": 60, "max_downloads": 1}, format="json").status_code == 409

    response = alice_client.post(url(share), {"expires_in": 60, "reset_downloads": True}, format="json")
    assert response.status_code == 200
    assert (response.json()["download_count"], response.json()["downloads_left"]) == (0, 1)


def test_a_higher_limit_lets_a_used_up_share_back_with_its_count(alice_client, shared_file):
    share = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1), max_downloads=1)
    assert share.count_download()
    response = alice_client.post(url(share), {"expires_in": 60, "max_downloads": 3}, format="json")
    assert response.status_code == 200
    assert (response.json()["download_count"], response.json()["downloads_left"]) == (1, 2)
    event = share.events.get(kind=ShareEvent.Kind.REACTIVATED)
    assert event.details["max_downloads"] == [1, 3]


def test_the_count_is_kept_unless_reset(alice_client, shared_file):
    share = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1), max_downloads=5)
    assert share.count_download()
    assert share.count_download()
    share.unshare()
    assert alice_client.post(url(share), {"expires_in": 60}, format="json").json()["download_count"] == 2


def test_a_deleted_file_cannot_be_shared_again(alice_client, shared_file):
    share = ended(shared_file)
    delete_file(shared_file)
    response = alice_client.post(url(share), {"expires_in": 60}, format="json")
    assert response.status_code == 409
    assert "deleted" in response.json()["detail"]
    share.refresh_from_db()
    assert share.status == Share.Status.UNSHARED


def test_a_live_share_is_not_reactivated(alice_client, shared_file):
    share = create_share(shared_file, 3600)
    response = alice_client.post(url(share), {"expires_in": 60}, format="json")
    assert response.status_code == 409
    assert "still active" in response.json()["detail"]
    assert not share.events.filter(kind=ShareEvent.Kind.REACTIVATED).exists()


def test_the_policy_maximum_counts_from_now(alice_client, shared_file):
    SharingPolicy.objects.create(default_lifetime=timedelta(hours=1), max_lifetime=timedelta(days=1))
    share = ended(shared_file)
    too_long = alice_client.post(url(share), {"expires_in": 86401}, format="json")
    assert too_long.status_code == 400
    assert "maximum lifetime" in str(too_long.json()["expires_in"])
    assert alice_client.post(url(share), {"expires_in": 86400}, format="json").status_code == 200


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"expires_in": 0}, "expires_in"),
        ({"expires_at": "2000-01-01T00:00:00Z"}, "expires_at"),
        ({"expires_in": 60, "expires_at": "2999-01-01T00:00:00Z"}, "expires_in"),
        ({"expires_in": 60, "password": "x"}, "password"),
        ({"reset_downloads": "perhaps"}, "reset_downloads"),
        ({"max_downloads": 0}, "max_downloads"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(alice_client, shared_file, body, field):
    share = ended(shared_file)
    response = alice_client.post(url(share), body, format="json")
    assert response.status_code == 400
    assert field in response.json()
    share.refresh_from_db()
    assert share.status == Share.Status.UNSHARED


def test_another_users_share_is_a_404(bob_client, shared_file):
    share = ended(shared_file)
    assert bob_client.post(url(share), {"expires_in": 60}, format="json").status_code == 404
    share.refresh_from_db()
    assert share.status == Share.Status.UNSHARED


def test_share_filters_do_not_hide_the_share(alice_client, shared_file):
    share = ended(shared_file)
    response = alice_client.post(url(share) + "?status=active", {"expires_in": 60}, format="json")
    assert response.status_code == 200


def test_a_deadline_passed_under_the_lock_changes_nothing(shared_file):
    share = ended(shared_file)
    with pytest.raises(ReactivationRefused) as refused:
        reactivate(share, timezone.now() - timedelta(seconds=1))
    assert refused.value.code == "past"
    share.refresh_from_db()
    assert share.status == Share.Status.UNSHARED


def test_two_racing_reactivations_one_wins(shared_file):
    share = ended(shared_file)

    def reactivate_once():
        try:
            reactivate(Share.objects.get(pk=share.pk), timezone.now() + timedelta(minutes=5))
        except ReactivationRefused as refused:
            return refused.code
        return "won"

    results = in_threads(reactivate_once, workers=6)
    assert sorted(results) == ["active"] * 5 + ["won"], results
    assert share.events.filter(kind=ShareEvent.Kind.REACTIVATED).count() == 1


@pytest.mark.postgres
def test_postgresql_racing_reactivations_one_wins(shared_file):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL")
    test_two_racing_reactivations_one_wins(shared_file)


@pytest.mark.fault
@pytest.mark.timeout(60)
def test_the_daemon_expires_a_reactivated_share_at_its_new_deadline(shared_file, tmp_path, media_root):
    share = ended(shared_file)
    output = tmp_path / "daemon.out"
    daemon = start_manage("runexpiry", "--pickup-interval", "0.05", output=output, MEDIA_ROOT=str(media_root))
    try:
        wait_for_text(output, "refresh:", 20, process=daemon)
        reactivate(share, timezone.now() + timedelta(seconds=1))
        assert wait_until(lambda: Share.objects.get(pk=share.pk).status == Share.Status.EXPIRED, 10)
    finally:
        stop(daemon)
    share.refresh_from_db()
    assert share.end_reason == Share.EndReason.EXPIRED
    assert timedelta(0) <= share.lateness < timedelta(seconds=0.5)
    kinds = list(share.events.order_by("at", "id").values_list("kind", flat=True))
    assert kinds == ["created", "unshared", "reactivated", "expired"]
