"""A flood from one address at one upload request, against a real gunicorn
on the test's database (as `make run` serves it): 100 anonymous creations
asking a million bytes each, then 1,000 one-byte PATCHes. The flood gets
429s with Retry-After once past REQUEST_RATE_LIMIT, what it set aside in
the owner's quota stays within half of it, and the owner, from the same
address, still uploads a file of their own."""

import math
import time
from collections import Counter
from datetime import timedelta

import pytest
import requests
from django.utils import timezone

from collect.models import UploadRequest
from sharing.models import SharingPolicy, StorageAccount, StoredFile
from tests.helpers import free_port, report, start_web, stop, wait_for_port
from tokens.service import issue

pytestmark = [pytest.mark.fault, pytest.mark.django_db(transaction=True)]

MiB = 1024 * 1024
QUOTA = 10 * MiB
LIMIT = 300  # requests a minute from the flood's address
POSTS, PATCHES = 100, 1000
TUS = {"Tus-Resumable": "1.0.0"}


@pytest.fixture
def server(tmp_path, settings):
    port = free_port()
    web = start_web(port, tmp_path / "web.log", MEDIA_ROOT=str(settings.MEDIA_ROOT), REQUEST_RATE_LIMIT=str(LIMIT))
    try:
        wait_for_port(port, 30, web)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(web)


def test_a_flood_at_one_request_gets_429s_and_the_owner_still_uploads(alice, server, capsys):
    SharingPolicy.objects.update_or_create(pk=SharingPolicy.SINGLETON_ID, defaults={"default_quota_bytes": QUOTA})
    upload_request = UploadRequest.create_for(owner=alice, expires_at=timezone.now() + timedelta(hours=1))
    endpoint = f"{server}/r/{upload_request.token}/uploads/"
    flood = requests.Session()
    answers, rate_limited = Counter(), 0
    began = time.monotonic()

    def note(response) -> None:
        nonlocal rate_limited
        answers[response.status_code] += 1
        if response.status_code == 429 and "Retry-After" in response.headers:
            assert int(response.headers["Retry-After"]) >= 1
            rate_limited += 1

    created = []
    for _ in range(POSTS):
        response = flood.post(endpoint, headers={**TUS, "Upload-Length": "1000000"}, timeout=30)
        note(response)
        if response.status_code == 201:
            created.append(response.headers["Location"])
    assert created, answers
    target, offset = created[0], 0
    for _ in range(PATCHES):
        response = flood.patch(
            target,
            data=b"x",
            headers={**TUS, "Upload-Offset": str(offset), "Content-Type": "application/offset+octet-stream"},
            timeout=30,
        )
        note(response)
        if response.status_code == 204:
            offset = int(response.headers["Upload-Offset"])
    flooded_for = time.monotonic() - began

    served = POSTS + PATCHES - rate_limited
    assert rate_limited, answers
    # No more than LIMIT in any minute: all of them when the flood took less
    # (as it does, in seconds); a slower machine only spreads it over more windows.
    assert served <= LIMIT * math.ceil(flooded_for / 60), (answers, flooded_for)
    assert answers[500] == 0
    account = StorageAccount.objects.get(pk=alice.pk)
    assert account.reserved_bytes == account.strangers_reserved_bytes <= QUOTA // 2

    # The owner, from the same address, stores a file of their own.
    token = issue(alice, name="test")[1]
    mine = requests.post(
        f"{server}/api/files/",
        headers={"Authorization": f"Token {token}"},
        files={"file": ("mine.bin", b"m" * (4 * MiB))},
        timeout=60,
    )
    assert mine.status_code == 201, mine.text
    assert StoredFile.objects.get(owner=alice).size == 4 * MiB
    report(
        capsys,
        "flood at one upload request",
        seconds=round(flooded_for, 2),
        answers=dict(sorted(answers.items())),
        rate_limited=rate_limited,
        strangers_reserved=account.strangers_reserved_bytes,
        bytes_written=offset,
    )
