"""Ended links on the owner's pages: they say what happened in plain words,
are not offered for sending (no Copy, no QR code), and can be reactivated
from the Manage page and the dashboard through the model's reactivate, the
API's own."""

from datetime import timedelta

import pytest
from django.utils import timezone

from sharing.models import Share, ShareEvent


def share_of(stored, seconds=3600, **options) -> Share:
    return Share.create_for(file=stored, expires_at=timezone.now() + timedelta(seconds=seconds), **options)


def used_up(stored) -> Share:
    share = share_of(stored, max_downloads=1)
    assert share.count_download()
    share.refresh_from_db()
    return share


def test_a_live_share_page_offers_copy_and_the_qr_code(alice_web, shared_file):
    page = alice_web.get(f"/shares/{share_of(shared_file).pk}/").content.decode()
    assert 'class="copy"' in page
    assert 'class="qr"' in page
    assert "Reactivate" not in page


def test_an_ended_share_page_offers_no_copy_nor_qr_but_says_what_happened(alice_web, shared_file):
    page = alice_web.get(f"/shares/{used_up(shared_file).pk}/").content.decode()
    assert 'class="copy"' not in page
    assert 'class="qr"' not in page
    assert "This link has been downloaded as many times as you allowed." in page
    assert "Downloaded as often as allowed" in page  # its time left
    assert 'id="reactivate-heading"' in page
    assert (
        'name="reset_downloads" aria-describedby="id_reset_downloads_helptext" id="id_reset_downloads" checked' in page
    )


def test_an_unshared_links_time_left_says_unshared_not_expired(alice_web, shared_file):
    share = share_of(shared_file)
    share.unshare()
    page = alice_web.get(f"/shares/{share.pk}/").content.decode()
    countdown = page.split('data-field="time_left"')[1].split("</span>")[0]
    assert countdown.endswith(">Unshared")


def test_reactivating_from_the_share_page_resets_downloads_for_the_new_lifetime(alice_web, shared_file):
    share = used_up(shared_file)
    response = alice_web.post(
        f"/shares/{share.pk}/reactivate/", {"lifetime": "86400", "reset_downloads": "on", "time_zone": "UTC"}
    )
    assert response.status_code == 302
    share.refresh_from_db()
    assert share.is_servable()
    assert share.download_count == 0
    assert timedelta(hours=23) < share.expires_at - timezone.now() <= timedelta(days=1)
    event = share.events.filter(kind=ShareEvent.Kind.REACTIVATED).get()
    assert event.details["reset_downloads"] is True


def test_reactivating_a_used_up_link_without_resetting_says_why_and_changes_nothing(alice_web, shared_file):
    share = used_up(shared_file)
    response = alice_web.post(f"/shares/{share.pk}/reactivate/", {"lifetime": "86400", "time_zone": "UTC"})
    assert response.status_code == 409
    assert "Count downloads from zero again" in response.content.decode()
    share.refresh_from_db()
    assert not share.is_servable()


def test_the_dashboards_reactivate_button_brings_the_link_back_and_returns(alice_web, shared_file):
    share = used_up(shared_file)
    dashboard = alice_web.get("/?status=ended").content.decode()
    assert f'action="/shares/{share.pk}/reactivate/"' in dashboard
    response = alice_web.post(f"/shares/{share.pk}/reactivate/", {"next": "/?status=all"})
    assert response.status_code == 302
    assert response["Location"] == "/?status=all"
    share.refresh_from_db()
    assert share.is_servable()
    assert share.download_count == 0


def test_a_live_link_is_not_reactivated(alice_web, shared_file):
    share = share_of(shared_file)
    before = share.expires_at
    assert alice_web.post(f"/shares/{share.pk}/reactivate/", {}).status_code == 409
    share.refresh_from_db()
    assert share.expires_at == before


@pytest.mark.parametrize("method", ["get", "put"])
def test_reactivate_is_a_post(alice_web, shared_file, method):
    share = used_up(shared_file)
    assert getattr(alice_web, method)(f"/shares/{share.pk}/reactivate/").status_code == 405


def test_another_users_share_is_not_reactivated(bob_web, shared_file):
    share = used_up(shared_file)
    assert bob_web.post(f"/shares/{share.pk}/reactivate/", {}).status_code == 404
    share.refresh_from_db()
    assert not share.is_servable()
