"""The owner's upload requests page, through Django's test client: the list
(only one's own, newest first, with what arrived), the form that makes one,
closing and deleting."""

import re
from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.test import Client
from django.utils import timezone

from collect.ending import close_request
from collect.models import ReceivedFile, UploadRequest
from collect.places import take_place
from collect.receiving import receive_posted_file
from sharing.models import SharingPolicy, StoredFile
from web.views.dashboard import PAGE_SIZE

pytestmark = pytest.mark.django_db


def request_of(owner, hours: float = 1, **fields) -> UploadRequest:
    return UploadRequest.create_for(owner=owner, expires_at=timezone.now() + timedelta(hours=hours), **fields)


def create(client, **fields):
    before = set(UploadRequest.objects.values_list("pk", flat=True))
    response = client.post("/requests/", {"lifetime": "86400", "time_zone": "UTC", **fields})
    made = UploadRequest.objects.exclude(pk__in=before)
    return response, (made.get() if made.exists() else None)


def arrive(upload_request, name="scan.pdf", data=b"%PDF-1.4 hello"):
    return receive_posted_file(upload_request, SimpleUploadedFile(name, data))


def test_the_page_needs_a_sign_in():
    response = Client().get("/requests/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_the_page_lists_only_ones_own_requests_newest_first(alice_web, alice, bob):
    request_of(alice, title="Older")
    request_of(alice, title="Newer")
    request_of(bob, title="Bob's secret")
    response = alice_web.get("/requests/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "Bob&#x27;s secret" not in html
    assert "Bob" not in html
    assert html.index("Newer") < html.index("Older")
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert 'href="/requests/"' in html  # the header's link


def test_a_row_shows_its_link_state_limits_use_and_files(alice_web, alice):
    upload_request = request_of(alice, title="Scans", max_files=3, max_bytes=10_000)
    arrive(upload_request, "first.pdf", b"x" * 1500)
    with transaction.atomic():  # an upload that has started, not finished
        take_place(upload_request.pk, "u" * 32, "second.pdf", 2000)
    html = alice_web.get("/requests/").content.decode()
    link = f"http://testserver/r/{upload_request.token}/"
    assert f'<a href="{link}" class="token">{link}</a>' in html
    assert f'data-copy-text="{link}"' in html
    assert re.search(r'data-field="state">\s*Open\s*<', html)
    assert f'<time class="local-time" datetime="{upload_request.expires_at.isoformat()}' in html
    assert 'data-field="files">2 of 3<' in html
    assert 'data-field="bytes">3.4\xa0KB of 9.8\xa0KB<' in html
    assert "first.pdf" in html
    assert "1.5\xa0KB" in html
    assert re.search(r"second.pdf</th>.*?arriving", html, re.S)
    assert f'action="/requests/{upload_request.pk}/close/"' in html


def test_an_ended_request_says_why_and_has_no_close_button(alice_web, alice):
    closed = request_of(alice, title="Closed one")
    close_request(closed)
    past = request_of(alice, title="Past one")
    UploadRequest.objects.filter(pk=past.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    html = alice_web.get("/requests/").content.decode()
    assert "Closed by you" in html
    assert "Ended at its deadline" in html  # the daemon has not marked it yet
    assert f"/requests/{closed.pk}/close/" not in html
    assert f"/requests/{past.pk}/close/" not in html
    assert f"/requests/{past.pk}/delete/" in html


def test_the_list_is_paginated(alice_web, alice):
    for number in range(PAGE_SIZE + 1):
        request_of(alice, title=f"Request {number:02}")
    first = alice_web.get("/requests/").content.decode()
    assert f"Request {PAGE_SIZE:02}" in first
    assert "Request 00" not in first
    assert "Page 1 of 2" in first
    second = alice_web.get("/requests/?page=2").content.decode()
    assert "Request 00" in second


def test_creating_a_request_with_everything(alice_web, alice):
    started = timezone.now()
    response, made = create(
        alice_web,
        title="Tax papers",
        note="All of 2025,\nplease",
        lifetime=str(7 * 86400),
        password="open sesame",
        max_files="5",
        max_bytes="10 MB",
        notify_by_email="on",
    )
    assert response.status_code == 302
    assert response["Location"] == "/requests/"
    assert made.owner == alice
    assert (made.title, made.note) == ("Tax papers", "All of 2025,\nplease")
    assert started + timedelta(days=7) <= made.expires_at <= timezone.now() + timedelta(days=7)
    assert (made.max_files, made.max_bytes) == (5, 10_000_000)
    assert made.notify_by_email
    assert made.check_password("open sesame")
    page = alice_web.get("/requests/").content.decode()
    assert f"Send this link: http://testserver/r/{made.token}/" in page


def test_creating_with_nothing_but_the_deadline(alice_web):
    response, made = create(alice_web)
    assert response.status_code == 302
    assert (made.title, made.note, made.max_files, made.max_bytes) == ("", "", None, None)
    assert not made.has_password
    assert not made.notify_by_email


def test_sizes_are_read_as_people_write_them(alice_web):
    for typed, size in [("1.5 GiB", 3 * 2**29), ("500mb", 500_000_000), ("2048", 2048)]:
        _response, made = create(alice_web, max_bytes=typed)
        assert made.max_bytes == size


def test_a_date_and_time_is_read_in_the_owners_time_zone(alice_web):
    tokyo = ZoneInfo("Asia/Tokyo")
    local = (timezone.now() + timedelta(days=2)).astimezone(tokyo).replace(microsecond=0, tzinfo=None)
    _response, made = create(alice_web, lifetime="custom", expires_local=local.isoformat(), time_zone="Asia/Tokyo")
    assert made.expires_at == local.replace(tzinfo=tokyo)


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"title": "x" * 201}, "title", "at most 200 characters"),
        ({"note": "x" * 1001}, "note", "at most 1000 characters"),
        ({"lifetime": "60"}, "lifetime", "Select a valid choice"),
        ({"lifetime": "custom"}, "expires_local", "Pick the date and time the link should end."),
        ({"lifetime": "custom", "expires_local": "2020-01-01T10:00"}, "expires_local", "already passed"),
        ({"lifetime": "custom", "expires_local": "2999-01-01T10:00"}, "expires_local", "maximum lifetime"),
        ({"lifetime": "custom", "expires_local": "tomorrow"}, "expires_local", "Enter a date and time such as"),
        ({"password": "x" * 1025}, "password", "at most 1024 characters"),
        ({"max_files": "0"}, "max_files", "greater than or equal to 1"),
        ({"max_files": "many"}, "max_files", "Enter a whole number"),
        ({"max_files": "100001"}, "max_files", "less than or equal to 100000"),
        ({"max_bytes": "lots"}, "max_bytes", "Enter a size such as 500 MB"),
        ({"max_bytes": "10 parsecs"}, "max_bytes", "Enter a size such as 500 MB"),
        ({"max_bytes": "0 MB"}, "max_bytes", "greater than or equal to 1"),
        ({"max_bytes": "99999999 TB"}, "max_bytes", "less than or equal to"),
        ({"max_bytes": "9" * 400}, "max_bytes", "Enter a size such as 500 MB"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(alice_web, fields, field, message):
    response, made = create(alice_web, **fields)
    assert response.status_code == 400
    assert made is None
    assert message in response.content.decode()
    assert field in response.context["form"].errors
    html = response.content.decode()
    # The field is marked invalid and points at its error.
    widget = re.search(rf'<(input|textarea)[^>]*name="{field}"[^>]*>', html)
    if field != "lifetime":
        assert 'aria-invalid="true"' in widget[0]
        assert "aria-describedby=" in widget[0]


def test_the_policys_maximum_bounds_the_presets(alice_web):
    SharingPolicy.objects.create(default_lifetime=timedelta(days=1), max_lifetime=timedelta(days=2))
    page = alice_web.get("/requests/").content.decode()
    assert "2 days (the longest allowed)" in page
    assert "30 days" not in page
    response, made = create(alice_web, lifetime=str(7 * 86400))
    assert response.status_code == 400
    assert made is None


def test_closing_a_request(alice_web, alice):
    upload_request = request_of(alice)
    response = alice_web.post(f"/requests/{upload_request.pk}/close/", follow=True)
    assert response.redirect_chain == [("/requests/", 302)]
    assert "is closed" in response.content.decode()
    upload_request.refresh_from_db()
    assert upload_request.end_reason == UploadRequest.EndReason.CLOSED
    assert not upload_request.is_open(timezone.now())
    assert Client().get(f"/r/{upload_request.token}/").status_code == 410
    again = alice_web.post(f"/requests/{upload_request.pk}/close/", follow=True)
    assert "had already ended" in again.content.decode()


def test_closing_takes_a_post(alice_web, alice):
    upload_request = request_of(alice)
    assert alice_web.get(f"/requests/{upload_request.pk}/close/").status_code == 405
    assert upload_request.is_open(timezone.now())


def test_deleting_asks_first_and_keeps_the_files_that_arrived(alice_web, alice):
    upload_request = request_of(alice, title="Photos")
    arrive(upload_request, "one.jpg")
    arrive(upload_request, "two.jpg")
    confirm = alice_web.get(f"/requests/{upload_request.pk}/delete/")
    assert confirm.status_code == 200
    html = confirm.content.decode()
    assert "Delete the upload request Photos?" in html
    assert "The 2 files that arrived through it stay among your files." in html
    assert UploadRequest.objects.filter(pk=upload_request.pk).exists()
    response = alice_web.post(f"/requests/{upload_request.pk}/delete/")
    assert response.status_code == 302
    assert response["Location"] == "/requests/"
    assert not UploadRequest.objects.exists()
    assert not ReceivedFile.objects.exists()
    assert sorted(StoredFile.objects.filter(owner=alice).values_list("name", flat=True)) == ["one.jpg", "two.jpg"]
    assert Client().get(f"/r/{upload_request.token}/").status_code == 404


def test_another_users_request_is_a_404(alice_web, bob):
    theirs = request_of(bob)
    assert alice_web.post(f"/requests/{theirs.pk}/close/").status_code == 404
    assert alice_web.get(f"/requests/{theirs.pk}/delete/").status_code == 404
    assert alice_web.post(f"/requests/{theirs.pk}/delete/").status_code == 404
    assert alice_web.post("/requests/999999/close/").status_code == 404
    theirs.refresh_from_db()
    assert theirs.is_open(timezone.now())


def test_the_note_is_shown_escaped(alice_web, alice):
    request_of(alice, note='<img src=x onerror="alert(1)">')
    html = alice_web.get("/requests/").content.decode()
    assert "<img src=x" not in html
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html
