"""The OpenAPI schema and the Swagger UI page."""

import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from tests.helpers import SHARE_FIELDS

REPO_ROOT = Path(__file__).resolve().parent.parent

EXPECTED_OPERATIONS = {
    ("/api/auth/token/", "post"),
    ("/api/files/", "get"),
    ("/api/files/", "post"),
    ("/api/files/{id}/", "get"),
    ("/api/files/{id}/", "delete"),
    ("/api/files/{id}/content/", "get"),
    ("/api/shares/", "get"),
    ("/api/shares/", "post"),
    ("/api/shares/{id}/", "get"),
    ("/api/shares/{id}/", "patch"),
    ("/api/shares/{id}/", "delete"),
    ("/api/shares/{id}/events/", "get"),
    ("/api/shares/{id}/reactivate/", "post"),
    ("/api/webhooks/", "get"),
    ("/api/webhooks/", "post"),
    ("/api/upload-requests/", "get"),
    ("/api/upload-requests/", "post"),
    ("/api/upload-requests/{id}/", "get"),
    ("/api/upload-requests/{id}/", "patch"),
    ("/api/upload-requests/{id}/", "delete"),
    ("/api/upload-requests/{id}/close/", "post"),
    ("/api/webhooks/{id}/", "get"),
    ("/api/webhooks/{id}/", "patch"),
    ("/api/webhooks/{id}/", "delete"),
}


def test_schema_generates_without_warnings_and_validates(tmp_path):
    # A subprocess, as CI runs it: warnings are collected per process.
    out = tmp_path / "schema.yml"
    result = subprocess.run(
        [sys.executable, "manage.py", "spectacular", "--validate", "--fail-on-warn", "--file", str(out)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stderr
    assert "Warning" not in result.stderr
    assert "Error" not in result.stderr
    schema = yaml.safe_load(out.read_text())
    operations = {(path, method) for path, item in schema["paths"].items() for method in item}
    assert operations == EXPECTED_OPERATIONS


@pytest.fixture
def schema(anon_client):
    response = anon_client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    return response.json()


@pytest.mark.django_db
def test_schema_is_served_without_login(schema):
    assert schema["openapi"].startswith("3.")
    assert schema["info"]["title"] == "Microcloud sharing API"


@pytest.mark.django_db
def test_schema_describes_the_share_fields(schema):
    share = schema["components"]["schemas"]["Share"]

    assert list(share["properties"]) == SHARE_FIELDS
    rules = {"max_downloads", "password", "message", "notify_first_download", "remind_before_expiry"}
    assert (
        set(schema["components"]["schemas"]["ShareCreateRequest"]["properties"])
        == {"file", "files", "expires_in", "expires_at", "sealed_metadata", "wrapped_secret"} | rules
    )
    patch = schema["components"]["schemas"]["PatchedShareUpdateRequest"]
    assert set(patch["properties"]) == {"expires_in", "expires_at"} | rules
    limit = schema["components"]["schemas"]["ShareCreateRequest"]["properties"]["max_downloads"]
    assert (limit["minimum"], limit["maximum"], limit["nullable"]) == (1, 1_000_000_000, True)
    assert schema["components"]["schemas"]["ShareCreateRequest"]["properties"]["password"]["writeOnly"] is True
    assert "password" not in share["properties"]


@pytest.mark.django_db
def test_schema_documents_errors_and_parameters(schema):
    paths = schema["paths"]

    assert set(paths["/api/shares/{id}/"]["patch"]["responses"]) == {"200", "400", "401", "403", "404", "409"}
    assert set(paths["/api/files/"]["post"]["responses"]) == {"201", "400", "401", "403", "413"}
    assert set(paths["/api/files/"]["post"]["requestBody"]["content"]) == {"multipart/form-data"}
    upload = schema["components"]["schemas"]["FileUploadRequest"]["properties"]["file"]
    assert upload["format"] == "binary"
    params = {p["name"]: p for p in paths["/api/shares/"]["get"]["parameters"]}
    assert params["status"]["schema"]["enum"] == ["active", "expired", "unshared"]
    assert params["file"]["schema"]["type"] == "integer"
    # Getting a token needs no token.
    assert "security" not in paths["/api/auth/token/"]["post"]


@pytest.mark.django_db
def test_swagger_ui_is_served_from_local_static_files(anon_client, settings):
    # The manifest storage needs collectstatic; the page itself does not.
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }

    response = anon_client.get("/api/docs/")

    assert response.status_code == 200
    html = response.content.decode()
    assert "swagger-ui" in html
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    assert "cdn.jsdelivr.net" not in html
    assert "/api/schema/" in html


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "valid"),
    [
        ({}, False),
        ({"file": 1}, True),
        ({"files": [1, 2]}, True),
        ({"file": 1, "files": [2]}, False),
        ({"files": [1, 1]}, False),
        ({"file": 1, "password": ""}, False),
        ({"file": 1, "expires_in": 60, "expires_at": "2030-01-01T00:00:00Z"}, False),
        ({"file": 1, "colour": "red"}, False),
    ],
)
def test_the_schema_says_what_a_new_share_needs(schema, body, valid):
    # The rules ShareCreateSerializer.validate enforces, readable by a client
    # from the schema alone: exactly one of file and files, each file once,
    # a password that is not empty, one deadline, no unknown field.
    share_create = schema["components"]["schemas"]["ShareCreateRequest"]
    assert jsonschema.Draft4Validator(share_create).is_valid(body) is valid
    body_of_create = schema["paths"]["/api/shares/"]["post"]["requestBody"]
    assert body_of_create["required"] is True


def test_only_a_change_offers_an_empty_password_as_removing_it(schema):
    schemas = schema["components"]["schemas"]
    assert "removes it" not in schemas["ShareCreateRequest"]["properties"]["password"]["description"]
    assert "removes it" in schemas["PatchedShareUpdateRequest"]["properties"]["password"]["description"]
