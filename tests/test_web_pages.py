"""The owner pages (web/) through Django's test client: sign-in, upload,
the share dialog, the dashboard and every action, on the real database.
The same flows in a real browser are in tests/browser/test_web_browser.py."""

import json
import os
import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone

from sharing.models import Share, SharingPolicy, StoredFile


def share_of(stored, seconds=3600, **options) -> Share:
    return Share.create_for(file=stored, expires_at=timezone.now() + timedelta(seconds=seconds), **options)


def upload(client, *files, json_answer=False):
    headers = {"Accept": "application/json"} if json_answer else {}
    return client.post("/files/", {"files": list(files)}, headers=headers)


def a_file(name="notes.txt", data=b"some notes\n", content_type="text/plain"):
    return SimpleUploadedFile(name, data, content_type=content_type)


# --- sign-in ----------------------------------------------------------------


def test_a_visitor_who_is_not_signed_in_is_sent_to_log_in(client, db):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"] == "/login/?next=/"


def test_logging_in_lands_on_the_dashboard(client, alice):
    page = client.get("/login/")
    assert page.status_code == 200
    assert b'name="username"' in page.content
    response = client.post("/login/", {"username": "alice", "password": "alice-password-1", "next": "/"})
    assert response.status_code == 302
    assert response["Location"] == "/"
    assert client.get("/").status_code == 200


def test_a_wrong_password_shows_the_form_again_with_an_error(client, alice):
    response = client.post("/login/", {"username": "alice", "password": "wrong"})
    assert response.status_code == 200
    assert b"Please enter a correct username and password" in response.content
    assert client.get("/").status_code == 302


def test_log_in_guesses_are_limited_like_the_admins(client, alice, settings):
    settings.LOGIN_FAILURES_PER_USERNAME = 2
    for _ in range(2):
        assert client.post("/login/", {"username": "alice", "password": "wrong"}).status_code == 200
    refused = client.post("/login/", {"username": "alice", "password": "alice-password-1"})
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) > 0
    assert b"Too many log-in attempts" in refused.content
    assert client.get("/").status_code == 302  # even the right password was not looked at


def test_log_out_is_a_post_and_ends_the_session(alice_web):
    assert alice_web.get("/logout/").status_code == 405
    response = alice_web.post("/logout/")
    assert response.status_code == 302
    assert response["Location"] == "/login/"
    assert alice_web.get("/").status_code == 302


def test_changing_the_password(alice_web, alice):
    response = alice_web.post(
        "/account/password/",
        {
            "old_password": "alice-password-1",
            "new_password1": "a new long phrase 42",
            "new_password2": "a new long phrase 42",
        },
    )
    assert response.status_code == 302
    assert response["Location"] == "/account/password/done/"
    alice.refresh_from_db()
    assert alice.check_password("a new long phrase 42")


def test_every_page_carries_the_content_security_policy_and_no_store(alice_web, shared_file):
    share = share_of(shared_file)
    for path in ("/", f"/files/{shared_file.pk}/share/", f"/shares/{share.pk}/", f"/files/{shared_file.pk}/delete/"):
        response = alice_web.get(path)
        assert response.status_code == 200, path
        policy = response["Content-Security-Policy"]
        assert "default-src 'none'" in policy
        assert "connect-src 'self'" in policy
        assert "script-src 'self'" in policy
        assert "no-store" in response["Cache-Control"]
    assert "Content-Security-Policy" in Client().get("/login/")


# --- upload -------------------------------------------------------------------


def test_uploading_several_files_from_the_form(alice_web, alice):
    response = upload(alice_web, a_file("a.txt", b"first"), a_file("b.txt", b"second"))
    assert response.status_code == 302
    assert response["Location"] == "/?files_page=1#files"  # the list unfolded, the new files on top
    stored = {f.name: f for f in StoredFile.objects.filter(owner=alice)}
    assert set(stored) == {"a.txt", "b.txt"}
    assert stored["b.txt"].content.read() == b"second"
    page = alice_web.get("/").content.decode()
    assert "Uploaded a.txt, b.txt." in page
    assert "a.txt" in page
    assert "b.txt" in page


def test_the_pages_script_uploads_one_file_a_request_and_gets_json(alice_web, alice):
    response = upload(alice_web, a_file("c.txt", b"third"), json_answer=True)
    assert response.status_code == 201
    [answer] = response.json()["files"]
    assert answer["name"] == "c.txt"
    assert answer["size"] == 5
    assert StoredFile.objects.get(pk=answer["id"]).owner == alice


def test_an_upload_over_the_limit_is_a_413_and_stores_nothing(alice_web, settings):
    settings.MAX_UPLOAD_BYTES = 10
    as_page = upload(alice_web, a_file("big.bin", b"x" * 11))
    assert as_page.status_code == 413
    assert b"larger than the maximum upload size of 10 bytes" in as_page.content
    as_json = upload(alice_web, a_file("big.bin", b"x" * 11), json_answer=True)
    assert as_json.status_code == 413
    assert "maximum upload size of 10 bytes" in as_json.json()["detail"]
    assert not StoredFile.objects.exists()
    assert upload(alice_web, a_file("ok.bin", b"x" * 10)).status_code == 302


def test_an_upload_whose_declared_size_is_far_too_large_is_refused_unread(alice_web, settings):
    settings.MAX_UPLOAD_BYTES = 10
    response = alice_web.post(
        "/files/", data=b"", content_type="multipart/form-data; boundary=x", CONTENT_LENGTH="10000000"
    )
    assert response.status_code == 413
    assert response["Connection"] == "close"


def test_an_upload_without_a_file_names_the_problem(alice_web):
    response = alice_web.post("/files/", {})
    assert response.status_code == 400
    assert b"Choose at least one file." in response.content
    as_json = alice_web.post("/files/", {}, headers={"Accept": "application/json"})
    assert as_json.status_code == 400
    assert as_json.json() == {"detail": "Choose at least one file."}


def test_an_empty_file_is_refused_naming_it(alice_web):
    response = upload(alice_web, a_file("empty.txt", b""))
    assert response.status_code == 400
    assert b"empty.txt is empty (0 bytes): there is nothing to share." in response.content
    as_json = upload(alice_web, a_file("empty.txt", b""), json_answer=True)
    assert as_json.status_code == 400
    assert "empty.txt is empty (0 bytes)" in as_json.json()["detail"]
    assert not StoredFile.objects.exists()


def test_an_upload_with_a_malformed_content_type_is_a_400(alice_web):
    response = upload(alice_web, a_file("x.txt", b"x", content_type="text/plain\x7f"), json_answer=True)
    assert response.status_code == 400
    assert "not a valid media type" in response.json()["detail"]


def test_an_anonymous_upload_stores_nothing(client, db):
    response = upload(client, a_file())
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")
    assert not StoredFile.objects.exists()


# --- the share dialog -------------------------------------------------------


def create_share(client, stored, **fields) -> tuple[int, Share | None]:
    before = set(Share.objects.values_list("pk", flat=True))
    response = client.post(f"/files/{stored.pk}/share/", {"lifetime": "86400", "time_zone": "UTC", **fields})
    made = Share.objects.exclude(pk__in=before)
    return response, (made.get() if made.exists() else None)


def test_sharing_with_a_preset_makes_a_link_and_shows_it(alice_web, shared_file):
    started = timezone.now()
    response, share = create_share(alice_web, shared_file, lifetime="3600")
    assert response.status_code == 302
    assert response["Location"] == f"/shares/{share.pk}/"
    assert started + timedelta(hours=1) <= share.expires_at <= timezone.now() + timedelta(hours=1)
    assert share.max_downloads is None
    assert not share.has_password
    page = alice_web.get(response["Location"]).content.decode()
    assert f'value="http://testserver/s/{share.token}"' in page
    assert "Your link is ready" in page
    assert '<svg role="img" aria-label="QR code of the link"' in page


def test_the_qr_code_is_the_links_own(alice_web, shared_file):
    import segno

    share = share_of(shared_file)
    page = alice_web.get(f"/shares/{share.pk}/").content.decode()
    expected = segno.make(f"http://testserver/s/{share.token}", error="m")
    other = segno.make(f"http://testserver/s/{share.token}x", error="m")
    path = 'class="qrline" stroke="#000" d="'
    drawn = page.split(path, 1)[1].split('"', 1)[0]
    assert drawn == expected.svg_inline(scale=4, border=4).split(path, 1)[1].split('"', 1)[0]
    assert drawn != other.svg_inline(scale=4, border=4).split(path, 1)[1].split('"', 1)[0]


def test_presets_are_cut_to_the_policys_maximum(alice_web, shared_file):
    SharingPolicy.objects.create(default_lifetime=timedelta(days=1), max_lifetime=timedelta(days=2))
    page = alice_web.get(f"/files/{shared_file.pk}/share/").content.decode()
    assert "1 hour" in page
    assert "1 day" in page
    assert "2 days (the longest allowed)" in page
    assert "7 days" not in page
    assert "30 days" not in page
    assert re.search(r'<input[^>]*value="86400"[^>]*checked', page)  # the policy's default is picked
    response, share = create_share(alice_web, shared_file, lifetime=str(7 * 86400))
    assert response.status_code == 400
    assert share is None
    assert b"Select a valid choice" in response.content
    response, share = create_share(alice_web, shared_file, lifetime=str(2 * 86400))
    assert response.status_code == 302
    assert share is not None


def test_a_date_and_time_is_read_in_the_owners_time_zone(alice_web, shared_file):
    tokyo = ZoneInfo("Asia/Tokyo")
    local = (timezone.now() + timedelta(days=2)).astimezone(tokyo).replace(microsecond=0, tzinfo=None)
    response, share = create_share(
        alice_web, shared_file, lifetime="custom", expires_local=local.isoformat(), time_zone="Asia/Tokyo"
    )
    assert response.status_code == 302
    assert share.expires_at == local.replace(tzinfo=tokyo).astimezone(UTC)
    # Without the page's script no zone is sent: the time is read as UTC.
    response, share = create_share(
        alice_web, shared_file, lifetime="custom", expires_local=local.isoformat(), time_zone=""
    )
    assert share.expires_at == local.replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"lifetime": "custom"}, "Pick the date and time the link should end."),
        ({"lifetime": "custom", "expires_local": "2020-01-01T10:00"}, "That time has already passed"),
        ({"lifetime": "custom", "expires_local": "2999-01-01T10:00"}, "longer than the maximum lifetime (30 days)"),
        ({"lifetime": "custom", "expires_local": "tomorrow"}, "Enter a date and time such as"),
        ({"lifetime": "custom", "expires_local": "2030-01-01T10:00+02:00"}, "without a UTC offset"),
        ({"lifetime": "custom", "expires_local": "2030-01-01T10:00", "time_zone": "Mars/Olympus"}, "Unknown time zone"),
        ({"lifetime": "60"}, "Select a valid choice"),
        ({"max_downloads": "0"}, "greater than or equal to 1"),
        ({"max_downloads": "many"}, "Enter a whole number"),
    ],
)
def test_bad_share_input_is_a_400_naming_the_problem(alice_web, shared_file, fields, message):
    response, share = create_share(alice_web, shared_file, **fields)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert share is None


def test_a_download_limit_and_a_password(alice_web, shared_file):
    response, share = create_share(alice_web, shared_file, max_downloads="3", password="open sesame")
    assert response.status_code == 302
    assert share.max_downloads == 3
    assert share.check_password("open sesame")
    assert not share.check_password("open")


def test_another_users_file_cannot_be_shared(bob_web, shared_file):
    assert bob_web.get(f"/files/{shared_file.pk}/share/").status_code == 404
    response, share = create_share(bob_web, shared_file)
    assert response.status_code == 404
    assert share is None


# --- the dashboard ------------------------------------------------------------


def test_the_dashboard_lists_only_the_owners_files_and_shares(alice_web, alice, bob, make_file):
    mine = make_file(alice, name="mine.txt")
    theirs = make_file(bob, name="theirs.txt")
    share_of(mine, max_downloads=5)
    share_of(theirs)
    page = alice_web.get("/").content.decode()
    assert "mine.txt" in page
    assert "theirs.txt" not in page
    assert "0 (limit 5)" in page


def test_the_status_tabs_filter_by_the_status_a_visitor_sees(alice_web, shared_file):
    live = share_of(shared_file)
    gone = share_of(shared_file)
    gone.unshare()
    # A share past its deadline that no daemon has marked yet counts as expired.
    overdue = Share.objects.create(
        owner=shared_file.owner,
        created_at=timezone.now() - timedelta(hours=2),
        expires_at=timezone.now() - timedelta(hours=1),
    )

    def rows(status):
        page = alice_web.get(f"/?status={status}").content.decode()
        return {share.pk for share in (live, gone, overdue) if f'data-share-id="{share.pk}"' in page}

    # The views and the search: tests/test_web_dashboard.py.
    assert rows("all") == {live.pk, gone.pk, overdue.pk}
    assert rows("active") == {live.pk}
    assert rows("expired") == {overdue.pk}
    assert rows("unshared") == {gone.pk}
    page = alice_web.get("/?status=expired").content.decode()
    moment = overdue.expires_at
    at = f'<time class="local-time" datetime="{moment.isoformat()}">{moment:%-d %b %Y, %H:%M:%S} UTC'
    assert f"Expired at {at}" in page


def test_an_ended_share_says_how_and_when_it_ended(alice_web, shared_file):
    share = share_of(shared_file)
    share.unshare()
    page = alice_web.get(f"/shares/{share.pk}/").content.decode()
    moment = share.ended_at
    at = f'<time class="local-time" datetime="{moment.isoformat()}">{moment:%-d %b %Y, %H:%M:%S} UTC'
    assert f"Unshared at {at}" in page
    assert "Extend or shorten" not in page  # only a live share can be changed


def test_the_dashboard_pages_its_lists(alice_web, shared_file, make_shares):
    make_shares(45, 3600)
    first = alice_web.get("/").content.decode()
    assert first.count('class="share-row"') == 10
    assert "Page 1 of 5" in first
    last = alice_web.get("/?page=5").content.decode()
    assert last.count('class="share-row"') == 5
    assert alice_web.get("/?page=oops").status_code == 200


def test_the_live_answer_gives_the_owners_shares_states(alice_web, shared_file, bob, make_file):
    share = share_of(shared_file, max_downloads=2)
    assert share.count_download()
    ended = share_of(shared_file)
    ended.unshare()
    theirs = share_of(make_file(bob))
    response = alice_web.get(f"/shares/live/?ids={share.pk},{ended.pk},{theirs.pk}")
    assert response.status_code == 200
    states = response.json()["shares"]
    assert set(states) == {str(share.pk), str(ended.pk)}
    live = states[str(share.pk)]
    assert live["live"] is True
    assert live["status"] == "active"
    assert live["downloads"] == "1 (limit 2)"
    assert live["downloads_left"] == "1"
    assert 3_590_000 < live["ms_left"] <= 3_600_000
    assert states[str(ended.pk)]["status"] == "unshared"
    assert states[str(ended.pk)]["ended"] == "Unshared at"
    assert states[str(ended.pk)]["ended_at"] == ended.ended_at.isoformat()


@pytest.mark.parametrize("ids", ["", "1,x", "-1", ",".join(["1"] * 201), "9" * 30])
def test_the_live_answer_refuses_bad_ids(alice_web, ids):
    response = alice_web.get(f"/shares/live/?ids={ids}")
    assert response.status_code == 400
    assert "share ids" in response.json()["detail"]


def test_the_live_answer_needs_a_signed_in_owner(client, db):
    assert client.get("/shares/live/?ids=1").status_code == 302


# --- actions ------------------------------------------------------------------


def test_extending_and_shortening_a_live_share(alice_web, shared_file):
    share = share_of(shared_file, seconds=60)
    response = alice_web.post(f"/shares/{share.pk}/expiry/", {"lifetime": str(7 * 86400), "time_zone": "UTC"})
    assert response.status_code == 302
    share.refresh_from_db()
    assert share.expires_at > timezone.now() + timedelta(days=6)
    alice_web.post(f"/shares/{share.pk}/expiry/", {"lifetime": "3600", "time_zone": "UTC"})
    share.refresh_from_db()
    assert share.expires_at < timezone.now() + timedelta(hours=2)


def test_an_ended_share_cannot_be_extended(alice_web, shared_file):
    share = share_of(shared_file)
    share.unshare()
    response = alice_web.post(f"/shares/{share.pk}/expiry/", {"lifetime": "3600", "time_zone": "UTC"})
    assert response.status_code == 409
    assert b"only a live link can be changed" in response.content
    before = share.expires_at
    share.refresh_from_db()
    assert share.expires_at == before
    assert share.status == Share.Status.UNSHARED


def test_a_bad_new_expiry_is_a_400(alice_web, shared_file):
    share = share_of(shared_file)
    response = alice_web.post(
        f"/shares/{share.pk}/expiry/", {"lifetime": "custom", "expires_local": "2001-01-01T00:00"}
    )
    assert response.status_code == 400
    assert b"That time has already passed" in response.content


def test_unsharing_goes_back_where_it_came_from_on_this_site_only(alice_web, shared_file):
    share = share_of(shared_file)
    response = alice_web.post(f"/shares/{share.pk}/unshare/", {"next": "/?status=active"})
    assert response.status_code == 302
    assert response["Location"] == "/?status=active"
    share.refresh_from_db()
    assert share.status == Share.Status.UNSHARED
    assert share.end_reason == Share.EndReason.UNSHARED
    other = share_of(shared_file)
    response = alice_web.post(f"/shares/{other.pk}/unshare/", {"next": "https://evil.example/"})
    assert response["Location"] == f"/shares/{other.pk}/"
    again = alice_web.post(f"/shares/{share.pk}/unshare/", follow=True)
    assert b"This link had already ended." in again.content


def test_deleting_a_file_says_how_many_live_links_it_ends(alice_web, shared_file, django_capture_on_commit_callbacks):
    share_of(shared_file)
    share_of(shared_file)
    share_of(shared_file).unshare()
    path = shared_file.content.path
    page = alice_web.get(f"/files/{shared_file.pk}/delete/")
    assert b"This ends 2 live links." in page.content
    with django_capture_on_commit_callbacks(execute=True):  # the bytes go once the deletion commits
        response = alice_web.post(f"/files/{shared_file.pk}/delete/", follow=True)
    assert b"Deleted report.txt; 2 live links ended." in response.content
    assert not StoredFile.objects.filter(pk=shared_file.pk).exists()
    assert Share.objects.filter(end_reason=Share.EndReason.FILE_DELETED).count() == 2
    assert not os.path.exists(path)


def test_another_users_shares_and_files_are_404_and_untouched(bob_web, shared_file):
    share = share_of(shared_file)
    for method, path in [
        ("get", f"/shares/{share.pk}/"),
        ("post", f"/shares/{share.pk}/unshare/"),
        ("post", f"/shares/{share.pk}/expiry/"),
        ("get", f"/files/{shared_file.pk}/delete/"),
        ("post", f"/files/{shared_file.pk}/delete/"),
    ]:
        assert getattr(bob_web, method)(path, {"lifetime": "3600"}).status_code == 404, path
    share.refresh_from_db()
    assert share.status == Share.Status.ACTIVE
    assert StoredFile.objects.filter(pk=shared_file.pk).exists()


def test_every_form_needs_its_csrf_token(alice, shared_file):
    share = share_of(shared_file)
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    for path, data in [
        (f"/shares/{share.pk}/unshare/", {}),
        (f"/shares/{share.pk}/expiry/", {"lifetime": "60"}),
        (f"/files/{shared_file.pk}/share/", {"lifetime": "3600"}),
        (f"/files/{shared_file.pk}/delete/", {}),
        ("/files/", {"files": [a_file()]}),
        ("/logout/", {}),
    ]:
        assert client.post(path, data).status_code == 403, path
    share.refresh_from_db()
    assert share.status == Share.Status.ACTIVE
    assert Share.objects.count() == 1
    assert StoredFile.objects.count() == 1


def test_the_live_answer_is_json_a_script_can_read(alice_web, shared_file):
    share = share_of(shared_file)
    response = alice_web.get(f"/shares/live/?ids={share.pk}")
    assert response["Content-Type"] == "application/json"
    assert json.loads(response.content)["shares"][str(share.pk)]["id"] == share.pk


def test_the_expiry_field_accepts_seconds(alice_web, shared_file):
    local = (datetime.now(UTC) + timedelta(hours=3)).replace(microsecond=0, tzinfo=None)
    response, share = create_share(alice_web, shared_file, lifetime="custom", expires_local=local.isoformat())
    assert response.status_code == 302
    assert share.expires_at == local.replace(tzinfo=UTC)


# --- the rule that keeps one set of writers -------------------------------------

WRITER_CALLS = {"update", "save", "delete", "create", "bulk_create", "bulk_update", "raw", "execute", "get_or_create"}


def test_no_web_view_writes_a_row_itself():
    """The pages ask the models (create_for, set_expiry, unshare,
    delete_with_shares, create_from_upload); the conditional UPDATEs in
    sharing/ stay the only writers of a share."""
    import ast

    from tests.helpers import REPO_ROOT

    found = []
    for path in sorted((REPO_ROOT / "web").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in WRITER_CALLS:
                found.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno} .{node.func.attr}(")
    assert found == []


def test_the_share_page_tells_the_links_history(alice_web, shared_file):
    from sharing.models import Visitor

    share = share_of(shared_file, max_downloads=3)
    assert share.count_download(visitor=Visitor("203.0.113.77", "curl/8.5"))
    share.set_expiry(share.expires_at + timedelta(hours=1))
    share.unshare()
    page = alice_web.get(f"/shares/{share.pk}/").content.decode()
    history = page.split('id="history-heading"', 1)[1]
    order = [
        history.index(word)
        for word in (
            "<strong>Unshared</strong>",
            "<strong>Renewed</strong>",
            "<strong>Downloaded</strong>",
            "<strong>Created</strong>",
        )
    ]
    assert order == sorted(order)  # newest first
    assert "13\xa0bytes · 203.0.113.0 · curl/8.5" in history  # the address as EVENT_CLIENT_ADDRESS keeps it
    fresh = share_of(shared_file)
    fresh.events.all().delete()
    assert "Nothing has happened to this link yet." in alice_web.get(f"/shares/{fresh.pk}/").content.decode()


def test_the_share_dialog_asks_about_email(alice_web, shared_file):
    page = alice_web.get(f"/files/{shared_file.pk}/share/").content.decode()
    assert re.search(r'<input type="checkbox" name="remind_before_expiry"[^>]*checked', page)  # on by default
    assert not re.search(r'<input type="checkbox" name="notify_first_download"[^>]*checked', page)
    _, share = create_share(alice_web, shared_file, notify_first_download="on")
    assert share.notify_first_download is True
    assert share.remind_before_expiry is False  # an unticked box is not sent


def test_the_dashboard_marks_password_links_and_says_a_limit_was_reached(alice_web, shared_file):
    locked = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1), password="pw")
    used_up = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1), max_downloads=1)
    assert used_up.count_download()
    page = alice_web.get("/?status=all").content.decode()
    rows = {row.split('"')[0]: row for row in page.split('data-share-id="')[1:]}
    assert '<span class="badge"' in rows[str(locked.pk)]
    assert '<span class="badge"' not in rows[str(used_up.pk)]
    assert 'data-expired-label="Expired">Limit reached</span>' in rows[str(used_up.pk)]
    assert f'<time class="local-time" datetime="{locked.expires_at.isoformat()}">' in rows[str(locked.pk)]


@pytest.mark.parametrize(("lifetime", "offered"), [(timedelta(minutes=2), 3600), (timedelta(days=3), 7 * 86400)])
def test_changing_an_expiry_offers_the_shortest_preset_that_lasts_as_long(alice_web, shared_file, lifetime, offered):
    now = timezone.now()
    share = Share.create_for(file=shared_file, expires_at=now + lifetime)
    page = alice_web.get(f"/shares/{share.pk}/").content.decode()
    checked = re.search(r'<input type="radio" name="lifetime" value="(\d+)"[^>]*checked', page)
    assert checked is not None
    assert int(checked[1]) == offered
