"""A request body the API cannot read gets a 415 naming the content types it accepts."""

import json

import pytest

pytestmark = pytest.mark.django_db


@pytest.fixture
def body(alice, make_file):
    return json.dumps({"file": make_file(alice).pk, "expires_in": 3600})


def test_a_json_body_sent_as_text_is_a_415_naming_json(alice_client, body):
    response = alice_client.post("/api/shares/", body, content_type="text/plain")

    assert response.status_code == 415
    detail = response.json()["detail"]
    assert "text/plain" in detail
    assert "application/json" in detail


def test_a_json_body_sent_as_a_form_is_a_415_saying_send_json(alice_client, body):
    # What curl -d sends without -H "Content-Type: application/json".
    response = alice_client.post("/api/shares/", body, content_type="application/x-www-form-urlencoded")

    assert response.status_code == 415
    detail = response.json()["detail"]
    assert "Content-Type: application/json" in detail
    assert body not in json.dumps(response.json())  # the body is not named as a field


def test_a_real_form_is_still_read(alice_client, alice, make_file):
    stored = make_file(alice)
    response = alice_client.post(
        "/api/shares/", f"file={stored.pk}&expires_in=3600", content_type="application/x-www-form-urlencoded"
    )

    assert response.status_code == 201, response.content


def test_a_json_body_is_read(alice_client, body):
    assert alice_client.post("/api/shares/", body, content_type="application/json").status_code == 201


def test_an_upload_endpoint_names_its_own_types(alice_client):
    response = alice_client.post("/api/files/", "{}", content_type="application/json")

    assert response.status_code == 415
    assert "multipart/form-data" in response.json()["detail"]
