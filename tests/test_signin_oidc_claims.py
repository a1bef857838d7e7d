"""Who the provider's claims say the user is, and what that makes them here:
the claims named in the settings, groups to roles at every sign-in (a group
removed takes the role away), accounts made or only found."""

import pytest
from django.contrib.auth import get_user_model

from signin.oidc.accounts import account_for
from signin.oidc.claims import Identity, identity_from, roles_for
from signin.oidc.refusals import AccountRefused


@pytest.fixture
def groups(settings):
    settings.OIDC_ADMIN_GROUPS = ["admins"]
    settings.OIDC_STAFF_GROUPS = ["helpdesk"]
    settings.OIDC_CREATE_USERS = True


def identity(username="alice", *groups, email="alice@example.com"):
    return Identity(username=username, email=email, groups=frozenset(groups))


def test_it_reads_the_claims_the_settings_name(settings):
    settings.OIDC_USERNAME_CLAIM = "uid"
    settings.OIDC_EMAIL_CLAIM = "mail"
    settings.OIDC_GROUPS_CLAIM = "roles"
    claims = {"uid": " alice ", "preferred_username": "mallory", "mail": "alice@example.com", "roles": ["a", 3, "b"]}
    assert identity_from(claims) == Identity("alice", "alice@example.com", frozenset({"a", "b"}))


def test_a_groups_claim_of_one_name_is_one_group():
    assert identity_from({"preferred_username": "alice", "groups": "admins"}).groups == {"admins"}


def test_claims_without_the_username_are_refused():
    with pytest.raises(AccountRefused):
        identity_from({"sub": "1234", "email": "alice@example.com"})


def test_a_username_too_long_for_the_account_is_refused():
    assert identity_from({"preferred_username": "a" * 150}).username == "a" * 150
    with pytest.raises(AccountRefused):
        identity_from({"preferred_username": "a" * 151})


def test_the_admin_group_makes_a_superuser_and_staff(groups):
    assert roles_for(frozenset({"admins"})) == {"is_superuser": True, "is_staff": True}
    assert roles_for(frozenset({"helpdesk"})) == {"is_superuser": False, "is_staff": True}
    assert roles_for(frozenset({"users"})) == {"is_superuser": False, "is_staff": False}


def test_without_group_settings_the_roles_are_left_as_they_are(settings, db):
    settings.OIDC_ADMIN_GROUPS = []
    settings.OIDC_STAFF_GROUPS = []
    assert roles_for(frozenset({"admins"})) == {}
    get_user_model().objects.create_superuser("root", "root@example.com", "x")
    root = account_for(identity("root"))
    assert root.is_superuser
    assert root.is_staff


def test_staff_groups_alone_leave_the_superuser_flag_alone(settings, db):
    settings.OIDC_ADMIN_GROUPS = []
    settings.OIDC_STAFF_GROUPS = ["helpdesk"]
    assert roles_for(frozenset({"users"})) == {"is_staff": False}


def test_a_group_removed_takes_the_role_away_at_the_next_sign_in(groups, db):
    alice = account_for(identity("alice", "admins"))
    assert alice.is_superuser
    alice = account_for(identity("alice", "helpdesk"))
    alice.refresh_from_db()
    assert not alice.is_superuser
    assert alice.is_staff
    alice = account_for(identity("alice"))
    alice.refresh_from_db()
    assert not alice.is_staff


def test_the_first_sign_in_makes_an_account_without_a_password(groups, db):
    alice = account_for(identity("alice", "users"))
    alice.refresh_from_db()
    assert alice.username == "alice"
    assert alice.email == "alice@example.com"
    assert not alice.has_usable_password()


def test_with_creating_off_only_existing_accounts_sign_in(groups, settings, db):
    settings.OIDC_CREATE_USERS = False
    with pytest.raises(AccountRefused, match="no account here for alice"):
        account_for(identity("alice"))
    assert not get_user_model().objects.exists()
    made = get_user_model().objects.create_user("alice", "old@example.com", "x")
    assert account_for(identity("alice")).pk == made.pk


def test_the_email_follows_the_provider(groups, db):
    get_user_model().objects.create_user("alice", "old@example.com", "x")
    account_for(identity("alice", email="new@example.com"))
    assert get_user_model().objects.get(username="alice").email == "new@example.com"


def test_no_email_from_the_provider_leaves_the_accounts(groups, db):
    get_user_model().objects.create_user("alice", "alice@example.com", "x")
    account_for(identity("alice", email=""))
    assert get_user_model().objects.get(username="alice").email == "alice@example.com"


def test_a_disabled_account_stays_out_and_keeps_its_roles(groups, db):
    get_user_model().objects.create_user("alice", is_active=False)
    with pytest.raises(AccountRefused, match="disabled"):
        account_for(identity("alice", "admins"))
    assert not get_user_model().objects.get(username="alice").is_superuser
