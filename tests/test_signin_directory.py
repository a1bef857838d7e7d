"""Sign-in against a real OpenLDAP (tests/slapd.py starts Debian's slapd
with a throw-away directory): bind and search, a wrong password and a
disabled user refused, group membership to roles at every sign-in,
StartTLS to a server that requires it."""

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.test import Client, RequestFactory

from signin.directory import DirectoryBackend
from tests import slapd

pytestmark = pytest.mark.django_db

PASSWORD = "carol-directory-pw-1"
DISABLED = "(&(uid=%(user)s)(!(employeeType=disabled)))"
# microcloud/settings.py's list, to which LDAP_SERVER_URI adds the directory.
BACKENDS = ["django.contrib.auth.backends.ModelBackend", "signin.proxy.TrustedProxyBackend"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with slapd.slapd(tmp_path_factory.mktemp("slapd")) as (uri, _ca):
        directory = slapd.Directory(uri)
        carol = directory.add_person("carol", PASSWORD)
        directory.add_person("dave", "dave-directory-pw-1")
        directory.add_group("staff", carol)
        directory.add_group("admins")
        directory.add_person("searcher", "searcher-pw-1")
        yield uri, directory
        directory.close()


@pytest.fixture
def directory(server, settings):
    uri, directory = server
    settings.LDAP_SERVER_URI = uri
    settings.LDAP_BIND_DN = f"uid=searcher,{slapd.PEOPLE}"
    settings.LDAP_BIND_PASSWORD = "searcher-pw-1"
    settings.LDAP_USER_SEARCH_BASE = slapd.PEOPLE
    settings.LDAP_USER_FILTER = DISABLED
    settings.LDAP_GROUP_SEARCH_BASE = slapd.GROUPS
    settings.LDAP_STAFF_GROUPS = [f"cn=staff,{slapd.GROUPS}"]
    settings.LDAP_SUPERUSER_GROUPS = [f"cn=admins,{slapd.GROUPS}"]
    settings.AUTHENTICATION_BACKENDS = [*BACKENDS, "signin.directory.DirectoryBackend"]
    return directory


def sign_in(username: str, password: str) -> Client:
    client = Client()
    client.post("/login/", {"username": username, "password": password})
    return client


def signed_in(client: Client) -> bool:
    return client.get("/").status_code == 200


def test_a_directory_user_signs_in_and_is_made_from_the_entry(directory):
    assert signed_in(sign_in("carol", PASSWORD))
    carol = get_user_model().objects.get(username="carol")
    assert (carol.email, carol.first_name, carol.last_name) == ("carol@example.org", "Carol", "Carol")
    assert not carol.has_usable_password()  # the password stays the directory's


def test_a_wrong_password_is_refused_with_the_forms_error(directory):
    client = Client()
    response = client.post("/login/", {"username": "carol", "password": "wrong"})
    assert response.status_code == 200
    assert b"enter a correct username and password" in response.content
    assert not signed_in(client)


def test_a_user_disabled_in_the_directory_can_no_longer_sign_in(directory):
    dave = f"uid=dave,{slapd.PEOPLE}"
    assert signed_in(sign_in("dave", "dave-directory-pw-1"))
    directory.set(dave, "employeeType", "disabled")
    try:
        assert not signed_in(sign_in("dave", "dave-directory-pw-1"))
    finally:
        directory.set(dave, "employeeType", "staff")


def test_a_user_disabled_in_the_site_cannot_sign_in_and_their_session_ends(directory):
    client = sign_in("carol", PASSWORD)
    assert signed_in(client)
    carol = get_user_model().objects.get(username="carol")
    carol.is_active = False
    carol.save()
    assert not signed_in(client)
    assert not signed_in(sign_in("carol", PASSWORD))
    assert authenticate(RequestFactory().post("/login/"), username="carol", password=PASSWORD) is None


def test_a_group_change_changes_the_role_at_the_next_sign_in(directory):
    carol_dn = f"uid=carol,{slapd.PEOPLE}"
    users = get_user_model().objects
    sign_in("carol", PASSWORD)
    carol = users.get(username="carol")
    assert (carol.is_staff, carol.is_superuser) == (True, False)
    directory.set(f"cn=admins,{slapd.GROUPS}", "member", slapd.ROOT_DN, carol_dn)
    try:
        sign_in("carol", PASSWORD)
        carol.refresh_from_db()
        assert (carol.is_staff, carol.is_superuser) == (True, True)
    finally:
        directory.set(f"cn=admins,{slapd.GROUPS}", "member", slapd.ROOT_DN)
    directory.set(f"cn=staff,{slapd.GROUPS}", "member", slapd.ROOT_DN)
    try:
        sign_in("carol", PASSWORD)
        carol.refresh_from_db()
        assert (carol.is_staff, carol.is_superuser) == (False, False)
    finally:
        directory.set(f"cn=staff,{slapd.GROUPS}", "member", carol_dn)


def test_off_without_a_server_uri(directory, settings):
    settings.LDAP_SERVER_URI = ""
    assert not signed_in(sign_in("carol", PASSWORD))
    backend = DirectoryBackend()
    assert backend.authenticate(RequestFactory().post("/login/"), username="carol", password=PASSWORD) is None
    assert backend._settings is None  # not even configured: no connection tried


def test_an_unreachable_directory_is_a_refused_sign_in_not_a_500(directory, settings):
    settings.LDAP_SERVER_URI = "ldap://127.0.0.1:9"
    response = Client().post("/login/", {"username": "carol", "password": PASSWORD})
    assert response.status_code == 200


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory):
    with slapd.slapd(tmp_path_factory.mktemp("slapd-tls"), tls=True) as (uri, ca):
        directory = slapd.Directory(uri, ca)
        directory.add_person("erin", "erin-directory-pw-1")
        yield uri, ca
        directory.close()


@pytest.fixture
def tls_directory(tls_server, settings):
    uri, ca = tls_server
    settings.LDAP_SERVER_URI = uri
    settings.LDAP_USER_SEARCH_BASE = slapd.PEOPLE
    settings.LDAP_CA_FILE = str(ca)
    settings.AUTHENTICATION_BACKENDS = [*BACKENDS, "signin.directory.DirectoryBackend"]
    return uri


def test_start_tls_signs_in_where_the_server_requires_tls(tls_directory, settings):
    settings.LDAP_START_TLS = True
    assert signed_in(sign_in("erin", "erin-directory-pw-1"))


def test_without_start_tls_that_server_refuses(tls_directory, settings):
    settings.LDAP_START_TLS = False
    assert not signed_in(sign_in("erin", "erin-directory-pw-1"))
