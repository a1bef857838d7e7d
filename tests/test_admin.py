"""The admin: pages render, filters and search pick the right rows, and every
change goes through the model rules (Share.unshare, Share.set_expiry,
StoredFile.delete_with_shares, the policy's clean())."""

from datetime import timedelta

import pytest
from django.contrib.messages import get_messages
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from sharing.admin import format_time_left
from sharing.admin_files import ShareInline
from sharing.models import Share, ShareItem, SharingPolicy, StoredFile

SHARES = reverse("admin:sharing_share_changelist")
FILES = reverse("admin:sharing_storedfile_changelist")
POLICY = reverse("admin:sharing_sharingpolicy_changelist")


@pytest.fixture
def admin_client(admin_user):
    client = Client()
    client.force_login(admin_user)
    return client


def make_share(file, expires_in):
    return Share.create_for(file=file, expires_at=timezone.now() + expires_in)


def make_past_active(file, ago=timedelta(minutes=5)):
    """An active share whose deadline has passed; the daemon has not run yet."""
    share = make_share(file, timedelta(hours=1))
    now = timezone.now()
    Share.objects.filter(pk=share.pk).update(created_at=now - ago - timedelta(hours=1), expires_at=now - ago)
    share.refresh_from_db()
    return share


def make_daemon_expired(file, late_ms=12):
    share = make_past_active(file)
    Share.objects.filter(pk=share.pk).update(
        status=Share.Status.EXPIRED,
        end_reason=Share.EndReason.EXPIRED,
        ended_at=share.expires_at + timedelta(milliseconds=late_ms),
    )
    share.refresh_from_db()
    return share


def make_unshared(file):
    share = make_share(file, timedelta(hours=1))
    assert share.unshare()
    return share


def listed(response):
    assert response.status_code == 200
    return {row.pk for row in response.context["cl"].result_list}


def message_texts(response):
    return [str(m) for m in get_messages(response.wsgi_request)]


@pytest.fixture
def shares(alice, bob, make_file):
    """One share in each situation, for alice and bob."""
    alice_file = make_file(alice, name="alice-report.txt")
    bob_file = make_file(bob, name="bob-notes.txt")
    return {
        "alice_active": make_share(alice_file, timedelta(hours=2, minutes=5, seconds=30)),
        "alice_past": make_past_active(alice_file),
        "alice_expired": make_daemon_expired(alice_file, late_ms=12),
        "bob_active": make_share(bob_file, timedelta(days=3)),
        "bob_unshared": make_unshared(bob_file),
    }


def pks(shares, *names):
    return {shares[name].pk for name in names}


# --- time left --------------------------------------------------------------


@pytest.mark.parametrize(
    ("remaining", "text"),
    [
        (timedelta(hours=2, minutes=5, seconds=30), "2 h 5 min"),
        (timedelta(days=3, hours=4, minutes=59), "3 d 4 h"),
        (timedelta(days=1, minutes=3), "1 d"),
        (timedelta(minutes=7, seconds=2), "7 min 2 s"),
        (timedelta(seconds=42), "42 s"),
        (timedelta(milliseconds=300), "< 1 s"),
        (timedelta(0), "—"),
        (timedelta(seconds=-5), "—"),
        (None, "—"),
    ],
)
def test_format_time_left(remaining, text):
    assert format_time_left(remaining) == text


# --- share changelist -------------------------------------------------------


def test_share_changelist_lists_everyones_shares_with_effective_status(admin_client, shares):
    response = admin_client.get(SHARES)
    assert listed(response) == pks(shares, *shares)
    html = response.content.decode()
    for text in ("alice-report.txt", "bob-notes.txt", "alice", "bob", "2 h 5 min", "2 d 23 h"):
        assert text in html

    admin = response.context["cl"].model_admin
    rows = {share.pk: share for share in response.context["cl"].result_list}
    status = {name: admin.effective_status(rows[share.pk]) for name, share in shares.items()}
    assert status == {
        "alice_active": "active",
        "alice_past": "expired",  # past its deadline, not yet marked by the daemon
        "alice_expired": "expired",
        "bob_active": "active",
        "bob_unshared": "unshared",
    }
    assert admin.time_left(rows[shares["alice_past"].pk]) == "—"
    assert admin.time_left(rows[shares["bob_unshared"].pk]) == "—"
    assert admin.lateness_ms(rows[shares["alice_expired"].pk]) == 12
    assert admin.lateness_ms(rows[shares["alice_active"].pk]) is None


def test_share_changelist_query_count_does_not_grow_with_rows(admin_client, alice, make_file):
    stored = make_file(alice)
    make_share(stored, timedelta(days=1))
    with CaptureQueriesContext(connection) as few:
        assert admin_client.get(SHARES).status_code == 200
    for _ in range(10):
        make_share(make_file(alice), timedelta(days=1))
    with CaptureQueriesContext(connection) as many:
        assert admin_client.get(SHARES).status_code == 200
    assert len(many) == len(few)


@pytest.mark.parametrize("order", ["", "-"])
@pytest.mark.parametrize("column", range(1, 10))
def test_share_changelist_sorts_by_every_column(admin_client, shares, column, order):
    assert listed(admin_client.get(SHARES, {"o": f"{order}{column}"})) == pks(shares, *shares)


def test_share_changelist_sorts_expired_shares_by_lateness(admin_client, alice, make_file):
    stored = make_file(alice)
    late, later = make_daemon_expired(stored, late_ms=5), make_daemon_expired(stored, late_ms=900)
    response = admin_client.get(SHARES, {"o": "-9"})  # lateness, descending
    rows = [share.pk for share in response.context["cl"].result_list]
    assert rows.index(later.pk) < rows.index(late.pk)


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("active", {"alice_active", "bob_active"}),
        ("expired", {"alice_past", "alice_expired"}),
        ("unshared", {"bob_unshared"}),
        ("bogus", set()),
    ],
)
def test_share_status_filter_uses_effective_status(admin_client, shares, status, expected):
    assert listed(admin_client.get(SHARES, {"status": status})) == pks(shares, *expected)


def test_share_expires_within_filter(admin_client, alice, make_file):
    stored = make_file(alice)
    in_30_min = make_share(stored, timedelta(minutes=30))
    in_5_h = make_share(stored, timedelta(hours=5))
    in_3_d = make_share(stored, timedelta(days=3))
    in_20_d = make_share(stored, timedelta(days=20))
    make_past_active(stored)
    unshared_soon = make_share(stored, timedelta(minutes=30))
    unshared_soon.unshare()

    def within(value):
        return listed(admin_client.get(SHARES, {"expires_within": value}))

    assert within("1h") == {in_30_min.pk}
    assert within("24h") == {in_30_min.pk, in_5_h.pk}
    assert within("7d") == {in_30_min.pk, in_5_h.pk, in_3_d.pk}
    assert in_20_d.pk not in within("7d")
    assert within("1y") == set()
    assert listed(admin_client.get(SHARES, {"expires_within": "24h", "status": "active"})) == {
        in_30_min.pk,
        in_5_h.pk,
    }


def test_share_search_by_token_file_name_and_owner(admin_client, shares):
    def search(term):
        return listed(admin_client.get(SHARES, {"q": term}))

    token = shares["bob_active"].token
    assert search(token) == pks(shares, "bob_active")
    assert search(token[:12]) == set()  # tokens match whole, not by prefix
    assert search("alice-report") == pks(shares, "alice_active", "alice_past", "alice_expired")
    assert search("bob") == pks(shares, "bob_active", "bob_unshared")
    assert search("no-such-thing") == set()


def test_share_changelist_date_hierarchy_drills_down_to_a_day(admin_client, shares):
    today = timezone.now()
    response = admin_client.get(
        SHARES, {"created_at__year": today.year, "created_at__month": today.month, "created_at__day": today.day}
    )
    expected = set(Share.objects.filter(created_at__date=today.date()).values_list("pk", flat=True))
    assert shares["bob_active"].pk in expected
    assert listed(response) == expected


# --- share actions ----------------------------------------------------------


def run_action(client, action, selected):
    return client.post(SHARES, {"action": action, "_selected_action": [share.pk for share in selected]}, follow=True)


def test_unshare_action_ends_active_shares_and_reports_skipped(admin_client, shares):
    selected = [shares["alice_active"], shares["bob_unshared"], shares["alice_past"]]
    response = run_action(admin_client, "unshare_selected", selected)
    assert response.status_code == 200
    assert message_texts(response) == ["Unshared 1 share. Skipped 2 shares that had already ended."]

    for share in (*selected, shares["bob_active"]):
        share.refresh_from_db()
    assert shares["alice_active"].status == Share.Status.UNSHARED
    assert shares["alice_active"].end_reason == Share.EndReason.UNSHARED
    assert shares["alice_active"].ended_at is not None
    # The past-deadline share stays for the daemon to mark expired, not unshared.
    assert shares["alice_past"].status == Share.Status.ACTIVE
    assert shares["bob_unshared"].end_reason == Share.EndReason.UNSHARED
    assert shares["bob_active"].status == Share.Status.ACTIVE  # not selected


def test_extend_action_adds_7_days_within_policy_and_reports(admin_client, alice, make_file):
    SharingPolicy.objects.create(default_lifetime=timedelta(days=1), max_lifetime=timedelta(days=30))
    stored = make_file(alice)
    short = make_share(stored, timedelta(days=1))
    near_limit = make_share(stored, timedelta(days=25))
    # Created before the policy was tightened: already beyond the maximum.
    beyond = make_share(stored, timedelta(days=40))
    ended = make_unshared(stored)
    untouched = make_share(stored, timedelta(days=2))
    before = {s.pk: s.expires_at for s in (short, near_limit, beyond, ended, untouched)}

    start = timezone.now()
    response = run_action(admin_client, "extend_by_7_days", [short, near_limit, beyond, ended])
    end = timezone.now()
    assert response.status_code == 200
    assert message_texts(response) == [
        "Extended 2 shares by 7 days. 1 of them only up to the maximum lifetime (30 days from now). "
        "Skipped 1 share that had already ended. Skipped 1 share already at or beyond the maximum lifetime."
    ]

    for share in (short, near_limit, beyond, ended, untouched):
        share.refresh_from_db()
    assert short.expires_at == before[short.pk] + timedelta(days=7)
    assert start + timedelta(days=30) <= near_limit.expires_at <= end + timedelta(days=30)
    assert beyond.expires_at == before[beyond.pk]  # never shortened
    assert ended.expires_at == before[ended.pk]
    assert ended.status == Share.Status.UNSHARED  # never resurrected
    assert untouched.expires_at == before[untouched.pk]


def test_extend_action_skips_share_past_its_deadline(admin_client, alice, make_file):
    past = make_past_active(make_file(alice))
    deadline = past.expires_at
    response = run_action(admin_client, "extend_by_7_days", [past])
    assert message_texts(response) == ["Extended 0 shares by 7 days. Skipped 1 share that had already ended."]
    past.refresh_from_db()
    assert past.expires_at == deadline


# --- share change form ------------------------------------------------------


def change_url(share):
    return reverse("admin:sharing_share_change", args=[share.pk])


def expiry_form(when, **extra):
    when = timezone.localtime(when)
    return {"expires_at_0": when.strftime("%Y-%m-%d"), "expires_at_1": when.strftime("%H:%M:%S"), **extra}


def test_share_change_form_renders_with_state_read_only(admin_client, shares):
    for share in shares.values():
        response = admin_client.get(change_url(share))
        assert response.status_code == 200
        assert share.token in response.content.decode()
        form_fields = set(response.context["adminform"].form.fields)
        assert form_fields == ({"expires_at"} if share.is_servable() else set())


def test_saving_a_new_expiry_renews_the_share_through_set_expiry(admin_client, shares, monkeypatch):
    share = shares["alice_active"]
    calls = []
    original = Share.set_expiry

    def spy(self, expires_at):
        calls.append(expires_at)
        return original(self, expires_at)

    monkeypatch.setattr(Share, "set_expiry", spy)
    new_deadline = (timezone.now() + timedelta(days=10)).replace(microsecond=0)
    # State fields in the POST are ignored: they are not in the form.
    response = admin_client.post(
        change_url(share), expiry_form(new_deadline, status="unshared", download_count="999", token="x")
    )
    assert response.status_code == 302
    assert calls == [new_deadline]
    before = share.updated_at
    share.refresh_from_db()
    assert share.expires_at == new_deadline
    assert share.status == Share.Status.ACTIVE
    assert share.download_count == 0
    assert share.updated_at > before


def test_saving_an_unchanged_form_writes_nothing(admin_client, shares, monkeypatch):
    share = shares["alice_active"]
    monkeypatch.setattr(Share, "set_expiry", lambda self, expires_at: pytest.fail("set_expiry called"))
    response = admin_client.get(change_url(share))
    initial = response.context["adminform"].form.initial["expires_at"]
    assert admin_client.post(change_url(share), expiry_form(initial)).status_code == 302
    before = share.updated_at
    share.refresh_from_db()
    assert share.updated_at == before


@pytest.mark.parametrize(
    ("offset", "error"),
    [
        (timedelta(days=31), "maximum lifetime"),
        (timedelta(minutes=-1), "in the future"),
    ],
)
def test_change_form_rejects_expiry_outside_policy(admin_client, shares, offset, error):
    share = shares["alice_active"]
    response = admin_client.post(change_url(share), expiry_form(timezone.now() + offset))
    assert response.status_code == 200
    assert error in str(response.context["adminform"].form.errors["expires_at"])
    before = share.expires_at
    share.refresh_from_db()
    assert share.expires_at == before


def test_change_form_never_renews_an_ended_share(admin_client, shares):
    for name in ("alice_past", "alice_expired", "bob_unshared"):
        share = shares[name]
        response = admin_client.post(change_url(share), expiry_form(timezone.now() + timedelta(days=2)))
        assert response.status_code == 302
        before = (share.status, share.expires_at, share.updated_at)
        share.refresh_from_db()
        assert (share.status, share.expires_at, share.updated_at) == before


def test_change_form_reports_a_share_that_ended_while_saving(admin_client, shares, monkeypatch):
    """The form saw an active share; set_expiry then found it ended."""
    share = shares["alice_active"]
    monkeypatch.setattr(Share, "set_expiry", lambda self, expires_at: False)
    response = admin_client.post(change_url(share), expiry_form(timezone.now() + timedelta(days=2)), follow=True)
    assert response.status_code == 200
    assert response.redirect_chain == [(change_url(share), 302)]
    assert message_texts(response) == ["The share ended before the new expiry could be saved; nothing was changed."]


def test_shares_cannot_be_added_or_deleted_in_admin(admin_client, shares):
    assert admin_client.get(reverse("admin:sharing_share_add")).status_code == 403
    share = shares["alice_active"]
    assert admin_client.post(reverse("admin:sharing_share_delete", args=[share.pk]), {"post": "yes"}).status_code == 403
    assert Share.objects.filter(pk=share.pk).exists()


# --- files ------------------------------------------------------------------


@pytest.mark.usefixtures("either_storage")  # the admin is the same on a bucket
def test_file_changelist_shows_sizes_and_share_counts(admin_client, alice, bob, make_file):
    big = make_file(alice, name="big.bin", data=b"x" * 2048, content_type="application/octet-stream")
    small = make_file(bob, name="small.txt")
    make_share(big, timedelta(days=1))
    make_unshared(big)
    response = admin_client.get(FILES)
    assert listed(response) == {big.pk, small.pk}
    admin = response.context["cl"].model_admin
    rows = {f.pk: f for f in response.context["cl"].result_list}
    assert admin.share_count(rows[big.pk]) == 2
    assert admin.share_count(rows[small.pk]) == 0
    assert admin.human_size(rows[big.pk]) == "2.0\xa0KB"
    html = response.content.decode()
    assert "big.bin" in html
    assert "application/octet-stream" in html


def test_file_search_by_name_owner_and_sha256(admin_client, alice, bob, make_file):
    report = make_file(alice, name="report.txt", data=b"alpha")
    notes = make_file(bob, name="notes.txt", data=b"beta")

    def search(term):
        return listed(admin_client.get(FILES, {"q": term}))

    assert search("report") == {report.pk}
    assert search("bob") == {notes.pk}
    assert search(report.sha256) == {report.pk}
    assert search(notes.sha256[:16]) == {notes.pk}


@pytest.mark.usefixtures("either_storage")  # the admin is the same on a bucket
def test_file_change_page_shows_shares_inline(admin_client, alice, make_file):
    stored = make_file(alice)
    active, ended = make_share(stored, timedelta(days=1)), make_unshared(stored)
    response = admin_client.get(reverse("admin:sharing_storedfile_change", args=[stored.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    assert active.token in html
    assert ended.token in html
    assert "unshared" in html
    assert admin_client.get(reverse("admin:sharing_storedfile_add")).status_code == 403


def test_file_change_page_shows_only_the_most_recent_shares_in_few_queries(admin_client, alice, make_file, monkeypatch):
    monkeypatch.setattr(ShareInline, "MAX_SHOWN", 3)
    stored = make_file(alice)
    url = reverse("admin:sharing_storedfile_change", args=[stored.pk])
    make_share(stored, timedelta(days=1))
    admin_client.get(url)  # process-wide caches (content types, the policy) filled, whichever test ran first
    with CaptureQueriesContext(connection) as one:
        assert admin_client.get(url).status_code == 200
    oldest, *recent = [make_share(stored, timedelta(days=1)) for _ in range(5)][-4:]
    with CaptureQueriesContext(connection) as many:
        response = admin_client.get(url)
    assert len(many) == len(one)
    html = response.content.decode()
    assert all(share.token in html for share in recent)
    assert oldest.token not in html
    assert "6 in all, the 3 most recent below" in html
    assert f"?items__file__id__exact={stored.pk}" in html
    assert listed(admin_client.get(SHARES, {"items__file__id__exact": stored.pk})) == set(
        Share.objects.holding(stored.pk).values_list("pk", flat=True)
    )


@pytest.mark.usefixtures("either_storage")  # the admin is the same on a bucket
def test_file_change_page_saves_a_new_name_and_keeps_shares(admin_client, alice, make_file):
    stored = make_file(alice)
    share = make_share(stored, timedelta(days=1))
    item = ShareItem.objects.get(share=share)
    data = {"name": "renamed.txt", "share_items-TOTAL_FORMS": "1", "share_items-INITIAL_FORMS": "1"}
    data |= {"share_items-MIN_NUM_FORMS": "0", "share_items-MAX_NUM_FORMS": "1000", "share_items-0-id": str(item.pk)}
    data["share_items-0-file"] = str(stored.pk)
    response = admin_client.post(reverse("admin:sharing_storedfile_change", args=[stored.pk]), data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    stored.refresh_from_db()
    share.refresh_from_db()
    assert stored.name == "renamed.txt"
    assert share.status == Share.Status.ACTIVE
    assert share.file_ids == [stored.pk]


def assert_deleted_with_shares(stored, shares_of_file, already_ended):
    assert not StoredFile.objects.filter(pk=stored.pk).exists()
    assert not stored.content.storage.exists(stored.content.name)
    for share in shares_of_file:
        share.refresh_from_db()
        assert share.files == []
        assert share.status == Share.Status.UNSHARED
    for share in already_ended:
        share.refresh_from_db()
        assert share.end_reason == Share.EndReason.UNSHARED  # ended before: reason kept


@pytest.mark.usefixtures("either_storage")  # the admin is the same on a bucket
def test_deleting_a_file_in_admin_unshares_its_shares_and_removes_bytes(
    admin_client, alice, make_file, django_capture_on_commit_callbacks
):
    stored = make_file(alice)
    other = make_file(alice, name="other.txt")
    active = [make_share(stored, timedelta(days=1)), make_share(stored, timedelta(hours=1))]
    ended = make_unshared(stored)
    other_share = make_share(other, timedelta(days=1))
    assert stored.content.storage.exists(stored.content.name)

    url = reverse("admin:sharing_storedfile_delete", args=[stored.pk])
    assert admin_client.get(url).status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(url, {"post": "yes"}, follow=True)
    assert response.status_code == 200
    assert "Unshared 2 shares of “report.txt”." in message_texts(response)

    assert_deleted_with_shares(stored, [*active, ended], [ended])
    for share in active:
        assert share.end_reason == Share.EndReason.FILE_DELETED
        assert share.ended_at is not None
    other_share.refresh_from_db()
    assert other_share.status == Share.Status.ACTIVE
    assert other.content.storage.exists(other.content.name)


@pytest.mark.usefixtures("either_storage")  # the admin is the same on a bucket
def test_bulk_delete_action_goes_through_delete_with_shares(
    admin_client, alice, bob, make_file, django_capture_on_commit_callbacks
):
    first, second = make_file(alice), make_file(bob, name="b.txt")
    first_share, second_share = make_share(first, timedelta(days=1)), make_share(second, timedelta(days=1))
    data = {"action": "delete_selected", "_selected_action": [first.pk, second.pk]}
    assert admin_client.post(FILES, data).status_code == 200  # confirmation page
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(FILES, {**data, "post": "yes"}, follow=True)
    assert response.status_code == 200
    assert "Unshared 2 shares of the deleted files." in message_texts(response)
    assert_deleted_with_shares(first, [first_share], [])
    assert_deleted_with_shares(second, [second_share], [])
    assert first_share.end_reason == second_share.end_reason == Share.EndReason.FILE_DELETED


# --- sharing policy ---------------------------------------------------------


POLICY_CHANGE = reverse("admin:sharing_sharingpolicy_change", args=[SharingPolicy.SINGLETON_ID])


def test_policy_changelist_creates_the_row_and_opens_it(admin_client):
    assert not SharingPolicy.objects.exists()
    response = admin_client.get(POLICY)
    assert response.status_code == 302
    assert response["Location"] == POLICY_CHANGE
    policy = SharingPolicy.objects.get()
    assert (policy.default_lifetime, policy.max_lifetime) == (timedelta(days=7), timedelta(days=30))
    # A second visit finds the same row.
    assert admin_client.get(POLICY)["Location"] == POLICY_CHANGE
    assert SharingPolicy.objects.count() == 1


def test_policy_page_renders_with_help_texts(admin_client):
    response = admin_client.get(POLICY, follow=True)
    assert response.status_code == 200
    html = response.content.decode()
    assert "Lifetime of a share created without expires_in or expires_at." in html
    assert "Longest lifetime a share may be given" in html
    assert "7 00:00:00" in html


def test_policy_saves(admin_client):
    admin_client.get(POLICY)
    response = admin_client.post(
        POLICY_CHANGE,
        {"default_lifetime": "1 00:00:00", "max_lifetime": "14 00:00:00", "ended_retention": "30 00:00:00"},
    )
    assert response.status_code == 302
    policy = SharingPolicy.current()
    assert (policy.default_lifetime, policy.max_lifetime) == (timedelta(days=1), timedelta(days=14))


@pytest.mark.parametrize(
    ("default", "maximum", "error"),
    [
        ("40 00:00:00", "30 00:00:00", "cannot exceed the maximum lifetime"),
        ("00:00:00", "30 00:00:00", "greater than or equal to"),
        ("soon", "30 00:00:00", "Enter a valid duration"),
    ],
)
def test_invalid_policy_shows_an_error_and_is_not_saved(admin_client, default, maximum, error):
    admin_client.get(POLICY)
    response = admin_client.post(POLICY_CHANGE, {"default_lifetime": default, "max_lifetime": maximum})
    assert response.status_code == 200
    assert error in str(response.context["adminform"].form.errors)
    policy = SharingPolicy.current()
    assert (policy.default_lifetime, policy.max_lifetime) == (timedelta(days=7), timedelta(days=30))


def test_policy_cannot_be_added_twice_or_deleted(admin_client):
    assert admin_client.get(reverse("admin:sharing_sharingpolicy_add")).status_code == 200
    admin_client.get(POLICY)
    assert admin_client.get(reverse("admin:sharing_sharingpolicy_add")).status_code == 403
    delete = reverse("admin:sharing_sharingpolicy_delete", args=[SharingPolicy.SINGLETON_ID])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    assert SharingPolicy.objects.count() == 1


# --- access and no 500s -----------------------------------------------------


def test_non_staff_users_are_sent_to_the_login_page(alice, shares):
    client = Client()
    client.force_login(alice)
    for url in (SHARES, FILES, POLICY):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("admin:login"))
    assert not SharingPolicy.objects.exists()


def test_every_admin_page_renders_without_server_error(admin_client, shares, alice, make_file):
    stored = StoredFile.objects.first()
    ShareItem.objects.filter(share=shares["bob_unshared"]).delete()  # a share of a deleted file
    admin_client.get(POLICY)
    urls = [reverse("admin:index"), reverse("admin:app_list", args=["sharing"])]
    for name, obj in (("share", shares["alice_active"]), ("share", shares["bob_unshared"]), ("storedfile", stored)):
        urls += [reverse(f"admin:sharing_{name}_{view}", args=[obj.pk]) for view in ("change", "history", "delete")]
    urls += [reverse(f"admin:sharing_{name}_changelist") for name in ("share", "storedfile")]
    urls += [reverse(f"admin:sharing_{name}_add") for name in ("share", "storedfile", "sharingpolicy")]
    urls += [POLICY_CHANGE, reverse("admin:sharing_sharingpolicy_history", args=[SharingPolicy.SINGLETON_ID])]
    urls += [f"{SHARES}?o=99", f"{SHARES}?created_at__year=notayear", f"{SHARES}?q=%00"]
    for url in urls:
        assert admin_client.get(url).status_code < 500, url


@pytest.mark.django_db
def test_admin_shows_limits_and_filters_shares_that_ended_by_their_limit(admin_client, alice, make_file):
    stored = make_file(alice)
    used_up = Share.create_for(file=stored, expires_at=timezone.now() + timedelta(hours=1), max_downloads=1)
    used_up.count_download()
    limited = Share.create_for(file=stored, expires_at=timezone.now() + timedelta(hours=1), max_downloads=5)
    limited.count_download()
    make_daemon_expired(stored)

    page = admin_client.get(SHARES).content.decode()
    assert "1 started; 4 of 5 left" in page
    assert "1 started; 0 of 1 left" in page
    by_limit = admin_client.get(SHARES, {"end_reason": "download_limit"})
    assert [s.pk for s in by_limit.context["cl"].result_list] == [used_up.pk]
    assert admin_client.get(SHARES, {"end_reason": "bogus"}).context["cl"].result_count == 0
    detail = admin_client.get(reverse("admin:sharing_share_change", args=[limited.pk])).content.decode()
    assert "downloads left" in detail.lower()
