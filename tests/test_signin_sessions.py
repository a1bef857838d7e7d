"""Whose session lives: a disabled user is signed out at the next page load,
their API tokens stop working, and their links keep working or end as
DISABLED_USERS_LINKS says."""

import pytest
from django.contrib.sessions.models import Session
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from sharing.models import Share, ShareEvent
from tests.helpers import create_share
from tokens import service

pytestmark = pytest.mark.django_db


def signed_in(username: str, password: str) -> Client:
    """A client signed in through the log-in page, as a person is."""
    client = Client()
    response = client.post("/login/", {"username": username, "password": password})
    assert response.status_code == 302, response.content
    assert client.get("/").status_code == 200
    return client


def disable(user) -> None:
    user.is_active = False
    user.save()


def admin_disables(admin_client: Client, user) -> None:
    """Untick Active in the admin's change form of `user`, keeping every other field."""
    url = f"/admin/auth/user/{user.pk}/change/"
    form = admin_client.get(url).context["adminform"].form
    data = {}
    for name, field in form.fields.items():
        value = form.initial.get(name, field.initial)
        if name in ("password",) or value is None:
            continue
        if name in ("groups", "user_permissions"):
            data[name] = [getattr(v, "pk", v) for v in value]
        elif hasattr(value, "date"):
            data[f"{name}_0"], data[f"{name}_1"] = value.strftime("%Y-%m-%d"), value.strftime("%H:%M:%S")
        elif isinstance(value, bool):
            if value:
                data[name] = "on"
        else:
            data[name] = value
    data.pop("is_active", None)
    response = admin_client.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors


def test_a_user_disabled_is_signed_out_at_the_next_page_load(alice):
    client = signed_in("alice", "alice-password-1")
    disable(alice)
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_a_user_disabled_in_the_admin_is_signed_out(alice, admin_user):
    client = signed_in("alice", "alice-password-1")
    admin = Client()
    admin.force_login(admin_user)
    admin_disables(admin, alice)
    alice.refresh_from_db()
    assert not alice.is_active
    assert client.get("/").status_code == 302


def test_the_session_ends_for_good_enabling_the_user_again_does_not_bring_it_back(alice):
    client = signed_in("alice", "alice-password-1")
    disable(alice)
    client.get("/")
    alice.is_active = True
    alice.save()
    assert client.get("/").status_code == 302
    assert Session.objects.count() == 0


def test_a_disabled_users_token_gets_401(alice):
    _token, key = service.issue(alice, name="script")
    api = APIClient()
    assert api.get("/api/files/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200
    disable(alice)
    alice.is_active = True
    alice.save()  # enabled again: the token stays revoked
    assert api.get("/api/files/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 401


def test_links_keep_working_by_default(alice, shared_file, settings):
    assert settings.DISABLED_USERS_LINKS == "keep"
    share = create_share(shared_file, 3600)
    disable(alice)
    assert Client().get(f"/s/{share.token}").status_code == 200
    share.refresh_from_db()
    assert share.status == Share.Status.ACTIVE


def test_links_end_when_the_setting_says_end(alice, bob, shared_file, make_file, settings):
    settings.DISABLED_USERS_LINKS = "end"
    mine = [create_share(shared_file, 3600), create_share(shared_file, 7200)]
    already_ended = create_share(shared_file, 3600)
    already_ended.unshare()
    bobs = create_share(make_file(bob), 3600)
    disable(alice)
    for share in mine:
        share.refresh_from_db()
        assert (share.status, share.end_reason) == (Share.Status.UNSHARED, Share.EndReason.UNSHARED)
        assert ShareEvent.objects.filter(share=share, kind=ShareEvent.Kind.UNSHARED).count() == 1
        assert Client().get(f"/s/{share.token}").status_code == 410
    assert ShareEvent.objects.filter(share=already_ended, kind=ShareEvent.Kind.UNSHARED).count() == 1
    bobs.refresh_from_db()
    assert bobs.status == Share.Status.ACTIVE


def test_saves_that_do_not_disable_leave_the_links(alice, shared_file, settings):
    settings.DISABLED_USERS_LINKS = "end"
    share = create_share(shared_file, 3600)
    alice.first_name = "Alice"
    alice.save()
    alice.is_active = False
    alice.save(update_fields=["first_name"])  # is_active not written: not disabled
    share.refresh_from_db()
    assert share.status == Share.Status.ACTIVE


def test_ending_the_links_is_one_update(alice, shared_file, settings):
    settings.DISABLED_USERS_LINKS = "end"
    for _ in range(5):
        create_share(shared_file, 3600)
    with CaptureQueriesContext(connection) as queries:
        disable(alice)
    updates = [q["sql"] for q in queries if q["sql"].startswith('UPDATE "sharing_share"')]
    assert len(updates) == 1
