"""The upload requests API against its own schema, fuzzed by schemathesis
with every check, as tests/test_api_fuzz.py does for the whole API (its
setup reused), with more examples: every operation on
/api/upload-requests/, each case sent as generated and, when it names an
id, again with the id of one of alice's requests (open, with limits and a
password; or ended), so the operations on a real row are fuzzed too and not
only their 404s."""

import itertools
from datetime import timedelta

import pytest
import schemathesis
from django.utils import timezone
from hypothesis import HealthCheck, settings

from collect.ending import close_request
from collect.models import UploadRequest
from tests.test_api_fuzz import NOT_APPLICABLE, api_schema, own_files, same_connection  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db


@pytest.fixture
def requests_schema(api_schema):  # noqa: F811 (the fixture imported above)
    return api_schema


@pytest.fixture
def alices_request(alice):
    """A new request of alice's for each example (one may delete it): every
    other one ended, the others open, with limits and a password."""
    turns = itertools.count()

    def make() -> int:
        upload_request = UploadRequest(
            owner=alice,
            expires_at=timezone.now() + timedelta(hours=1),
            title="Fuzzed",
            max_files=3,
            max_bytes=1000,
        )
        upload_request.set_password("open sesame")
        upload_request.save(force_insert=True)
        if next(turns) % 2:
            close_request(upload_request)
        return upload_request.pk

    return make


schema = schemathesis.pytest.from_fixture("requests_schema").include(path_regex=r"^/api/upload-requests/")


@schema.parametrize()
# derandomize: the same requests on every run, so CI never fails on a draw it did not make before.
@settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_every_upload_request_operation_answers_as_its_schema_says(case, alices_request):
    excluded = NOT_APPLICABLE.get((case.method.upper(), case.path), [])
    case.call_and_validate(excluded_checks=excluded)
    generated = (case.path_parameters or {}).get("id")
    if isinstance(generated, int):  # a valid id: the same case on a request of alice's
        case.path_parameters = {**case.path_parameters, "id": alices_request()}
        case.call_and_validate(excluded_checks=excluded)
