"""An upload's rule of life, as the database asks it (upload_open_q, due) and as a
row in hand does (Upload.is_open), agree around its deadline."""

from datetime import timedelta

import pytest

from tests.test_uploads_support import new_upload
from uploads.models import Upload, upload_open_q

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("offset", [timedelta(microseconds=-1), timedelta(0), timedelta(microseconds=1)])
def test_the_rule_in_python_and_in_the_database_agree_around_the_deadline(alice_client, offset):
    new_upload(alice_client, 10)
    upload = Upload.objects.get()
    now = upload.expires_at + offset
    open_in_database = Upload.objects.filter(upload_open_q(now)).exists()
    assert upload.is_open(now) is open_in_database
    assert Upload.objects.due(now).exists() is not open_in_database  # nobody writes it
    assert open_in_database is (offset < timedelta(0))  # at the deadline it is over
