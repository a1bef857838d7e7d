"""The trusted proxy header: believed from TRUSTED_PROXY_ADDRESSES only,
never by the API, off unless TRUSTED_PROXY_HEADER is set."""

import http.client
from urllib.parse import urlsplit

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.test import Client, override_settings
from pytest_django.live_server_helper import LiveServer

from tokens import service

PROXY = "127.0.0.1"


@pytest.fixture
def proxy_on(settings):
    settings.TRUSTED_PROXY_HEADER = "Remote-User"
    settings.TRUSTED_PROXY_ADDRESSES = ["127.0.0.1/32", "10.1.0.0/16"]


def get(path: str, *, user: str | None, address: str, client: Client | None = None, **headers):
    client = client or Client()
    if user is not None:
        headers["HTTP_REMOTE_USER"] = user
    return client.get(path, REMOTE_ADDR=address, **headers)


@pytest.mark.django_db
@pytest.mark.usefixtures("proxy_on")
class TestFromTheProxy:
    def test_the_header_signs_in_from_the_configured_address(self, alice):
        response = get("/", user="alice", address=PROXY)
        assert response.status_code == 200
        assert response.context["user"] == alice

    def test_an_address_inside_a_configured_cidr_is_the_proxy_too(self, alice):
        assert get("/", user="alice", address="10.1.200.3").status_code == 200

    def test_a_user_seen_first_is_created(self, db):
        assert get("/", user="carol", address=PROXY).status_code == 200
        assert get_user_model().objects.filter(username="carol", is_staff=False).exists()

    def test_a_disabled_user_is_refused(self, alice):
        alice.is_active = False
        alice.save()
        assert get("/", user="alice", address=PROXY).status_code == 302

    def test_the_session_ends_when_the_proxy_stops_sending_the_header(self, alice):
        client = Client()
        assert get("/", user="alice", address=PROXY, client=client).status_code == 200
        assert get("/", user=None, address=PROXY, client=client).status_code == 302


@pytest.mark.django_db
@pytest.mark.usefixtures("proxy_on")
class TestFromAnywhereElse:
    @pytest.mark.parametrize("address", ["127.0.0.2", "10.2.0.1", "::1", ""])
    def test_the_header_is_ignored(self, alice, address):
        response = get("/", user="alice", address=address)
        assert response.status_code == 302
        assert response["Location"].startswith("/login/")

    def test_a_forwarded_for_naming_the_proxy_changes_nothing(self, alice, settings):
        settings.NUM_PROXIES = 1
        response = get("/", user="alice", address="127.0.0.2", HTTP_X_FORWARDED_FOR=PROXY)
        assert response.status_code == 302

    def test_the_header_changes_nothing_for_a_session_made_by_the_proxy(self, alice, bob):
        client = Client()
        assert get("/", user="alice", address=PROXY, client=client).status_code == 200
        response = get("/", user="bob", address="127.0.0.2", client=client)
        assert response.context["user"] == alice
        response = get("/", user=None, address="127.0.0.2", client=client)
        assert response.context["user"] == alice

    @pytest.mark.parametrize(("path", "address"), [("/", "127.0.0.2"), ("/api/files/", PROXY)])
    def test_the_backend_itself_refuses_elsewhere_and_the_api(self, alice, rf, path, address):
        request = rf.get(path, REMOTE_ADDR=address)
        assert authenticate(request, remote_user="alice") is None
        assert authenticate(rf.get("/", REMOTE_ADDR=PROXY), remote_user="alice") == alice

    def test_the_api_never_takes_the_header(self, alice):
        response = get("/api/files/", user="alice", address=PROXY)
        assert response.status_code in (401, 403)
        assert not get_user_model().objects.filter(username="carol").exists()

    def test_the_api_leaves_a_session_made_by_the_proxy_alone(self, alice):
        client = Client()
        assert get("/", user="alice", address=PROXY, client=client).status_code == 200
        response = get("/api/files/", user="bob", address=PROXY, client=client)
        assert response.status_code == 200
        assert get("/", user="alice", address=PROXY, client=client).context["user"] == alice

    def test_the_api_takes_a_token_from_the_proxy(self, alice):
        _token, key = service.issue(alice, name="script")
        response = get("/api/files/", user="bob", address=PROXY, HTTP_AUTHORIZATION=f"Token {key}")
        assert response.status_code == 200


@pytest.mark.django_db
def test_the_header_does_nothing_when_the_setting_is_off(alice, settings, rf):
    settings.TRUSTED_PROXY_ADDRESSES = ["127.0.0.1/32"]
    assert settings.TRUSTED_PROXY_HEADER == ""
    assert get("/", user="alice", address=PROXY).status_code == 302
    assert authenticate(rf.get("/", REMOTE_ADDR=PROXY), remote_user="alice") is None


@pytest.fixture(scope="module")
def live_server(tmp_path_factory):
    """pytest-django's live server, with STATIC_ROOT at an empty folder (as tests/browser/conftest.py's)."""
    with override_settings(STATIC_ROOT=tmp_path_factory.mktemp("live-server-static")):
        server = LiveServer("localhost")
    yield server
    server.stop()


def live_get(live_server, path: str, source: str, user: str) -> http.client.HTTPResponse:
    """GET `path` of the live server over a real connection from `source` (a loopback address)."""
    url = urlsplit(live_server.url)
    connection = http.client.HTTPConnection("127.0.0.1", url.port, timeout=10, source_address=(source, 0))
    connection.request("GET", path, headers={"Remote-User": user})
    response = connection.getresponse()
    response.read()
    connection.close()
    return response


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("proxy_on")
def test_over_real_connections_127_0_0_2_is_not_the_proxy(live_server, alice):
    assert live_get(live_server, "/", PROXY, "alice").status == 200
    refused = live_get(live_server, "/", "127.0.0.2", "alice")
    assert refused.status == 302
    assert refused.getheader("Location").startswith("/login/")
