"""URLs under /api/ that name no endpoint answer JSON, in the API's error
shape; a POST that only lacks its trailing slash is not redirected into a GET."""

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", ["/api/share/", "/api/webhooks/0.5/", "/api/shares/1/nothing/", "/api/nothing"])
@pytest.mark.parametrize("method", ["get", "post", "delete"])
def test_an_unknown_api_url_is_a_json_404(alice_client, path, method):
    response = getattr(alice_client, method)(path)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": f"No such API endpoint: {path}. The endpoints are listed at /api/docs/."}


def test_a_post_without_the_trailing_slash_names_the_right_url_instead_of_redirecting(alice_client, shared_file):
    response = alice_client.post("/api/shares", {"file": shared_file.pk}, format="json")
    assert response.status_code == 404
    assert "Location" not in response
    assert response.json()["detail"].endswith("Did you mean /api/shares/ (with the trailing slash)?")


def test_a_get_without_the_trailing_slash_is_still_redirected(alice_client):
    response = alice_client.get("/api/shares", {"status": "active"})
    assert response.status_code == 301
    assert response["Location"] == "/api/shares/?status=active"


def test_an_unknown_api_url_is_json_even_for_a_session_without_its_csrf_token(alice):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    response = client.delete("/api/webhooks/0.5/")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"


@pytest.mark.parametrize("path", ["/api/nothing%0Ahere/", "/api/upload-requests/%1C%0A/close/", "/api/%0A"])
def test_an_unknown_api_url_with_a_line_break_is_a_json_404_too(alice_client, path):
    response = alice_client.post(path)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"  # not the HTML page for people
    assert response.json()["detail"]
