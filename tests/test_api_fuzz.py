"""The API against its own schema, fuzzed by schemathesis with every check:
requests generated from the live schema (valid and invalid) go to the real
application with alice's token, and each answer is checked against what the
schema declares (status codes, bodies, headers, content types): no 5xx,
invalid data refused, valid data accepted where it can be (NOT_APPLICABLE
says where it cannot, and why). Who may reach whose things is tested
operation by operation elsewhere (tests/test_api_*.py)."""

from datetime import timedelta

import pytest
import schemathesis
from django.core import signals
from django.db import close_old_connections
from django.utils import timezone
from hypothesis import HealthCheck, settings
from microcloud_cli.sealing import new_secret, seal_metadata
from microcloud_cli.wrapping import wrap
from schemathesis import checks

from microcloud.wsgi import application
from sharing.models import MAX_FILES_PER_SHARE, Share, SharingPolicy, StoredFile
from tokens.service import issue

pytestmark = pytest.mark.django_db


@pytest.fixture
def same_connection():
    """As Django's test client does: the requests share the test's database
    connection (and its transaction) instead of closing it after each one."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def own_files(alice, make_file):
    """Things of alice's for the {id} operations to find: a file with a share,
    and more files than a share may hold, for the ids a new share names
    (rows only: making a share never reads a file's bytes). The operations
    run one after another on the same rows, so DELETE /api/files/{id}/ may
    have removed some by the time a share is made: a few hundred spare."""
    stored = make_file(alice)
    Share.create_for(file=stored, expires_at=timezone.now() + timedelta(hours=1), max_downloads=2)
    StoredFile.objects.bulk_create(
        StoredFile(owner=alice, content=f"files/fuzz/{n}", name=f"{n}.txt", size=1, content_type="text/plain")
        for n in range(2 * MAX_FILES_PER_SHARE)
    )
    return StoredFile.objects.filter(owner=alice).order_by("pk")


@pytest.fixture
def api_schema(alice, own_files, same_connection):
    schema = schemathesis.openapi.from_wsgi("/api/schema/", application)
    schema.config.headers = {"Authorization": f"Token {issue(alice, name='test')[1]}"}
    return schema


def own_share_body(body: dict, own_files) -> dict:
    """A new share's file ids, sealed metadata and wrapped secret come from the world, not
    from the schema: the ids a generated body names become alice's own files
    (distinct ids stay distinct). Everything else is sent as generated."""
    body = dict(body)
    own_files = list(own_files.values_list("pk", flat=True)[:MAX_FILES_PER_SHARE])
    if isinstance(body.get("file"), int):
        body["file"] = own_files[0]
    if isinstance(body.get("files"), list) and all(isinstance(pk, int) for pk in body["files"]):
        distinct = {pk: own_files[n] for n, pk in enumerate(dict.fromkeys(body["files"]))}
        body["files"] = [distinct[pk] for pk in body["files"]]
    if isinstance(body.get("sealed_metadata"), str):
        # Sealed metadata is ciphertext a client made (docs/encryption.md),
        # with its note inside: a real body, and no plain message beside it.
        body["sealed_metadata"] = seal_metadata(new_secret(), [{"name": "a.txt", "type": "text/plain", "size": 1}])
        body.pop("message", None)
    if isinstance(body.get("wrapped_secret"), str) and isinstance(body.get("password"), str):
        # A wrapped secret is ciphertext too, its password the verifier.
        body["password"], body["wrapped_secret"] = wrap(new_secret(), body["password"], iterations=100_000)
    return body


def allowed_deadline(body: dict) -> dict:
    """A schema-valid deadline may be past, or beyond the sharing policy's
    longest lifetime (both a 400 naming it): whatever operation sets a
    share's deadline is sent one the policy allows."""
    body = dict(body)
    longest = SharingPolicy.current().max_lifetime
    if isinstance(body.get("expires_in"), int) and body["expires_in"] > longest.total_seconds():
        body["expires_in"] = int(longest.total_seconds())
    if "expires_at" in body:
        body["expires_at"] = (timezone.now() + min(longest, timedelta(hours=1))).isoformat()
    return body


schema = schemathesis.pytest.from_fixture("api_schema")

# Checks that cannot hold for an operation, and why (everything else runs everywhere).
NOT_APPLICABLE = {
    # Schema-valid credentials are almost always wrong ones: 400, as DRF's token view answers.
    ("POST", "/api/auth/token/"): [checks.positive_data_acceptance],
    # A well-formed URL whose host does not resolve to a public address is refused (SSRF).
    ("POST", "/api/webhooks/"): [checks.positive_data_acceptance],
    ("PATCH", "/api/webhooks/{id}/"): [checks.positive_data_acceptance],
    # A schema-valid deadline may be past, or beyond the policy's maximum lifetime: a 400 naming it.
    ("POST", "/api/upload-requests/"): [checks.positive_data_acceptance],
    # Multipart sends every value as text: "0" is how a form spells false.
    ("POST", "/api/files/"): [checks.negative_data_rejection],
}


@schema.parametrize()
# derandomize: the same requests on every run, so CI never fails on a draw it did not make before.
@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_every_operation_answers_as_its_schema_says(case, own_files):
    operation = (case.method.upper(), case.path)
    if operation == ("POST", "/api/shares/") and isinstance(case.body, dict):
        case.body = own_share_body(case.body, own_files)
    if case.path.startswith("/api/shares/") and isinstance(case.body, dict):
        case.body = allowed_deadline(case.body)
    case.call_and_validate(excluded_checks=NOT_APPLICABLE.get(operation, []))
