"""The API's contract for integrators (a client generated from the schema
works unedited): Bearer tokens, unknown fields refused on create, and a
schema that declares bodies, bounds and error answers."""

import pytest
from rest_framework.test import APIClient

from sharing.models import Share
from tokens.service import issue

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("keyword", ["Token", "Bearer", "bearer"])
def test_a_token_is_accepted_as_token_or_bearer(alice, keyword):
    key = issue(alice, name="test")[1]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"{keyword} {key}")
    assert client.get("/api/files/").status_code == 200


@pytest.mark.parametrize("header", ["Bearer", "Bearer a b", "Basic abc", "Bearer \u00e9t\u00e9"])
def test_a_malformed_or_foreign_header_is_a_401(alice, header):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    response = client.get("/api/files/")
    assert response.status_code == 401
    assert "detail" in response.json()


def test_unknown_fields_on_create_are_refused_by_name(alice_client, shared_file):
    response = alice_client.post(
        "/api/shares/", {"file": shared_file.pk, "expires_in": 60, "expire_in": 60, "colour": "red"}, format="json"
    )
    assert response.status_code == 400
    assert sorted(response.json()) == ["colour", "expire_in"]
    assert "does not exist" in response.json()["colour"][0]
    assert not Share.objects.exists()


def test_form_posts_still_work_for_the_token(alice):
    response = APIClient().post("/api/auth/token/", {"username": "alice", "password": "alice-password-1"})
    assert response.status_code == 200  # curl -d username=... -d password=...


@pytest.fixture
def schema(db):
    return APIClient().get("/api/schema/", {"format": "json"}).json()


def test_request_bodies_are_json_and_split_from_responses(schema):
    paths = schema["paths"]
    for path, method in (("/api/auth/token/", "post"), ("/api/shares/", "post"), ("/api/shares/{id}/", "patch")):
        assert list(paths[path][method]["requestBody"]["content"]) == ["application/json"], path
    components = schema["components"]["schemas"]
    assert "token" not in components["AuthTokenRequest"]["properties"]
    assert components["Token"]["required"] == ["token"]


def test_secured_operations_declare_401_and_403_with_error_bodies(schema):
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            if not any(operation.get("security", [])):  # [] or [{}]: no credentials needed
                continue
            assert {"401", "403"} <= set(operation["responses"]), (method, path)
            for status, answer in operation["responses"].items():
                if status.startswith("4"):
                    assert "application/json" in answer["content"], (method, path, status)
    token = schema["paths"]["/api/auth/token/"]["post"]
    assert not any(token.get("security", []))
    assert "401" not in token["responses"]
    assert schema["components"]["securitySchemes"]["tokenAuth"] == {
        "type": "http",
        "scheme": "bearer",
        "description": schema["components"]["securitySchemes"]["tokenAuth"]["description"],
    }


def test_bounds_the_server_enforces_are_declared(schema):
    create = schema["components"]["schemas"]["ShareCreateRequest"]["properties"]
    assert create["expires_in"]["minimum"] == 1
    assert create["expires_in"]["maximum"] > 10**9
    page_size = {p["name"]: p for p in schema["paths"]["/api/shares/"]["get"]["parameters"]}["page_size"]
    assert (page_size["schema"]["minimum"], page_size["schema"]["maximum"]) == (1, 500)


def test_the_download_declares_any_type(schema):
    content = schema["paths"]["/api/files/{id}/content/"]["get"]["responses"]["200"]["content"]
    assert set(content) == {"*/*", "application/octet-stream"}


def test_the_schema_declares_the_rules_the_serializers_enforce(alice_client):
    schema = alice_client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    schemas = schema["components"]["schemas"]
    for name in ("ShareCreateRequest", "PatchedShareUpdateRequest", "ShareReactivateRequest"):
        assert schemas[name]["not"] == {"required": ["expires_in", "expires_at"]}, name
    for name in ("PatchedShareUpdateRequest", "PatchedWebhookEndpointUpdateRequest"):
        assert schemas[name]["minProperties"] == 1, name
    file_filter = {p["name"]: p for p in schema["paths"]["/api/shares/"]["get"]["parameters"]}["file"]
    assert file_filter["schema"]["minimum"] == 1


@pytest.mark.parametrize("given", ["0", "-1", "x"])
def test_a_file_filter_below_1_is_a_400_as_the_schema_says(alice_client, given):
    response = alice_client.get("/api/shares/", {"file": given})
    assert response.status_code == 400
    assert response.json() == {"file": ["file must be a file id (a positive integer)."]}
