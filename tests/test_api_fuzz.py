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
from schemathesis import checks

from api.authentication import issue_token
from microcloud.wsgi import application
from sharing.models import Share

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
def api_schema(alice, make_file, same_connection):
    # Things of alice's for the {id} operations to find.
    stored = make_file(alice)
    Share.create_for(file=stored, expires_at=timezone.now() + timedelta(hours=1), max_downloads=2)
    schema = schemathesis.openapi.from_wsgi("/api/schema/", application)
    schema.config.headers = {"Authorization": f"Token {issue_token(alice).key}"}
    return schema


schema = schemathesis.pytest.from_fixture("api_schema")

# Checks that cannot hold for an operation, and why (everything else runs everywhere).
NOT_APPLICABLE = {
    # Schema-valid credentials are almost always wrong ones: 400, as DRF's token view answers.
    ("POST", "/api/auth/token/"): [checks.positive_data_acceptance],
    # A schema-valid file id may name no file of the caller's: a 400 naming `file`.
    ("POST", "/api/shares/"): [checks.positive_data_acceptance],
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
def test_every_operation_answers_as_its_schema_says(case):
    case.call_and_validate(excluded_checks=NOT_APPLICABLE.get((case.method.upper(), case.path), []))
