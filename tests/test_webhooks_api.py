"""/api/webhooks/: owner-scoped endpoints, the secret shown once, kinds and
targets validated, re-enabling a failing endpoint; and the admin's lists
and "retry now"."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from sharing.models import Share
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.targets import is_public

pytestmark = pytest.mark.django_db

URL = "http://127.0.0.1:8999/hook"


def register(client, **body):
    return client.post("/api/webhooks/", {"url": URL, "events": ["expired"], **body}, format="json")


def test_create_shows_the_secret_once(alice_client, alice):
    response = register(alice_client, events=["downloaded", "expired", "expired"])
    assert response.status_code == 201, response.data
    body = response.json()
    assert set(body) == {"id", "url", "events", "state", "failing_since", "created_at", "secret"}
    assert body["secret"].startswith("whsec_")
    assert body["events"] == ["downloaded", "expired"]  # each once, in the kinds' order
    assert body["state"] == "active"
    endpoint = WebhookEndpoint.objects.get()
    assert (endpoint.owner, endpoint.secret) == (alice, body["secret"])
    for shown in (alice_client.get(f"/api/webhooks/{endpoint.pk}/").json(), alice_client.get("/api/webhooks/").json()):
        assert "secret" not in str(shown)
        assert body["secret"] not in str(shown)
    assert alice_client.get("/api/webhooks/").json()["results"][0]["id"] == endpoint.pk


def test_another_users_endpoint_is_a_404(alice_client, bob_client):
    endpoint_id = register(alice_client).json()["id"]
    assert bob_client.get("/api/webhooks/").json()["count"] == 0
    for method in ("get", "patch", "delete"):
        response = getattr(bob_client, method)(f"/api/webhooks/{endpoint_id}/", {"events": ["created"]}, format="json")
        assert response.status_code == 404, method
    assert WebhookEndpoint.objects.get().events == ["expired"]


def test_anonymous_is_refused(anon_client):
    assert anon_client.get("/api/webhooks/").status_code == 401
    assert register(anon_client).status_code == 401


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"events": []}, "events", "empty"),
        ({"events": ["exploded"]}, "events", "Unknown event kinds: 'exploded'"),
        ({"events": "expired"}, "events", "list"),
        ({"url": "ftp://example.com/x"}, "url", "http"),
        ({"url": "not a url"}, "url", "valid URL"),
        ({"url": "http://user:pw@127.0.0.1/x"}, "url", "credentials"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(alice_client, body, field, words):
    response = register(alice_client, **body)
    assert response.status_code == 400
    assert field in response.json()
    assert words.lower() in str(response.json()[field]).lower()
    # The API's error shape: a list of messages per field, never a dict by position.
    assert isinstance(response.json()[field], list)
    assert all(isinstance(message, str) for message in response.json()[field])


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/hook",
        "http://localhost:8000/hook",
        "http://[::1]/hook",
        "http://10.1.2.3/hook",
        "http://192.168.0.10/hook",
        "http://172.16.5.4/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://224.0.0.1/hook",
        "http://0.0.0.0/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://[fd00::1]/hook",
        # IPv4 inside IPv6 (compatible, translated, NAT64, 6to4): ipaddress calls these global.
        "http://[::7f00:1]/hook",
        "http://[::ffff:0:127.0.0.1]/hook",
        "http://[64:ff9b::a9fe:a9fe]/hook",
        "http://[2002:7f00:1::]/hook",
    ],
)
def test_private_targets_are_refused_unless_allowed(alice_client, settings, url):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    response = register(alice_client, url=url)
    assert response.status_code == 400
    assert "public addresses" in str(response.json()["url"])
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    assert register(alice_client, url=url).status_code == 201


def test_a_public_address_is_accepted_with_private_targets_refused(alice_client, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    assert register(alice_client, url="https://93.184.215.14/hook").status_code == 201


def test_patch_changes_url_and_events_and_refuses_the_rest(alice_client):
    endpoint_id = register(alice_client).json()["id"]
    path = f"/api/webhooks/{endpoint_id}/"
    response = alice_client.patch(path, {"events": ["created"], "url": "http://127.0.0.1:9/new"}, format="json")
    assert response.status_code == 200
    assert (response.json()["events"], response.json()["url"]) == (["created"], "http://127.0.0.1:9/new")
    for body, field in [({"secret": "whsec_x"}, "secret"), ({"state": "failing"}, "state"), ({}, "non_field_errors")]:
        response = alice_client.patch(path, body, format="json")
        assert response.status_code == 400, body
        assert field in response.json()


def test_patch_state_active_re_enables_and_makes_pending_deliveries_due(alice_client, alice, shared_file):
    endpoint_id = register(alice_client, events=["created"]).json()["id"]
    Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1))
    later = timezone.now() + timedelta(hours=5)
    WebhookDelivery.objects.update(next_attempt_at=later, first_failed_at=timezone.now(), attempts=9)
    WebhookEndpoint.objects.update(state="failing", failing_since=timezone.now())
    response = alice_client.patch(f"/api/webhooks/{endpoint_id}/", {"state": "active"}, format="json")
    assert response.status_code == 200
    assert (response.json()["state"], response.json()["failing_since"]) == ("active", None)
    delivery = WebhookDelivery.objects.get()
    assert delivery.next_attempt_at <= timezone.now()
    assert delivery.first_failed_at is None


def test_delete_removes_the_endpoint_and_its_pending_deliveries(alice_client, shared_file):
    endpoint_id = register(alice_client, events=["created"]).json()["id"]
    Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1))
    assert WebhookDelivery.objects.count() == 1
    assert alice_client.delete(f"/api/webhooks/{endpoint_id}/").status_code == 204
    assert not WebhookEndpoint.objects.exists()
    assert not WebhookDelivery.objects.exists()


def test_admin_lists_and_retry_now(client, admin_user, alice, shared_file):
    endpoint = WebhookEndpoint.objects.create(owner=alice, url=URL, events=["created"])
    Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1))
    later = timezone.now() + timedelta(hours=5)
    WebhookDelivery.objects.update(next_attempt_at=later, claimed_until=later, attempts=3, last_status=500)
    client.force_login(admin_user)
    page = client.get(reverse("admin:webhooks_webhookendpoint_changelist"))
    assert page.status_code == 200
    assert URL in page.text
    assert endpoint.secret not in client.get(reverse("admin:webhooks_webhookendpoint_change", args=[endpoint.pk])).text
    delivery = WebhookDelivery.objects.get()
    listing = reverse("admin:webhooks_webhookdelivery_changelist")
    for query in ("", "?state=pending", "?state=retrying", f"?q={delivery.webhook_id}"):
        page = client.get(listing + query)
        assert page.status_code == 200
        assert delivery.webhook_id in page.text, query
    assert delivery.webhook_id not in client.get(listing + "?state=delivered").text
    response = client.post(listing, {"action": "retry_now", "_selected_action": [delivery.pk]})
    assert response.status_code == 302
    delivery.refresh_from_db()
    assert delivery.next_attempt_at <= timezone.now()
    assert delivery.claimed_until is None


@pytest.mark.parametrize("address", ["2606:4700::1111", "::ffff:8.8.8.8", "8.8.8.8"])
def test_public_addresses_stay_allowed(address):
    assert is_public(address)
