"""DOWNLOAD_OFFLOAD: Django checks and counts, the front server sends.

First the answers Django gives (no front server needed), then the whole
path through Debian's nginx in front of gunicorn: the bytes, the headers,
and the checks (expiry, limit, password) still made by Django first. The
nginx test skips without nginx, except under CI=true (.ci/run installs it).
"""

import http.client
import os
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from microcloud import nginx_front as front
from sharing.models import Share, StoredFile
from tests.proxying import nginx_before_gunicorn

DATA = bytes(range(256)) * 40  # 10,240 bytes


@pytest.fixture
def stored(alice, make_file):
    return make_file(alice, name="Report 2026.pdf", data=DATA, content_type="application/pdf")


def share_of(stored, seconds=3600, **options) -> Share:
    return Share.create_for(file=stored, expires_at=timezone.now() + timedelta(seconds=seconds), **options)


def counted(share: Share) -> int:
    share.refresh_from_db()
    return share.total_downloads


@pytest.fixture
def accel(settings):
    settings.DOWNLOAD_OFFLOAD = "x-accel-redirect"
    settings.DOWNLOAD_OFFLOAD_PREFIX = "/_protected/"
    return settings


def test_a_whole_file_download_is_counted_then_handed_to_nginx(accel, anon_client, stored):
    share = share_of(stored)
    response = anon_client.get(f"/s/{share.token}")
    assert response.status_code == 200
    assert response["X-Accel-Redirect"] == f"/_protected/{stored.content.name}"
    assert response.content == b""  # nginx sends the bytes
    assert response["Content-Type"] == "application/pdf"
    assert response["Content-Disposition"] == 'attachment; filename="Report 2026.pdf"'
    assert response["Content-Security-Policy"] == "sandbox"
    assert response["Cache-Control"] == "no-store"
    assert not response.cookies  # resuming needs no cookie
    assert counted(share) == 1


def test_a_limited_link_is_streamed_here_where_the_bytes_sent_are_seen(accel, anon_client, stored):
    """Only this process sees how far a response got, and a limited link's
    budget is kept in bytes: it is never offloaded."""
    share = share_of(stored, max_downloads=1)
    response = anon_client.get(f"/s/{share.token}")
    assert response.status_code == 200
    assert "X-Accel-Redirect" not in response
    assert b"".join(response.streaming_content) == DATA  # the test client closes it when read
    share.refresh_from_db()
    assert share.bytes_left == share.budget - len(DATA)


def test_x_sendfile_names_the_files_own_path(settings, anon_client, stored):
    settings.DOWNLOAD_OFFLOAD = "x-sendfile"
    share = share_of(stored)
    response = anon_client.get(f"/s/{share.token}")
    assert response["X-Sendfile"] == stored.content.path
    assert Path(response["X-Sendfile"]).read_bytes() == DATA
    assert counted(share) == 1


def test_a_ranged_request_is_still_streamed_by_django(accel, anon_client, stored):
    share = share_of(stored)
    response = anon_client.get(f"/s/{share.token}", HTTP_RANGE="bytes=0-99")
    assert response.status_code == 206
    assert "X-Accel-Redirect" not in response
    assert b"".join(response.streaming_content) == DATA[:100]


@pytest.mark.parametrize("ending", ["expired", "unshared", "used up"])
def test_an_ended_link_is_refused_before_anything_is_offloaded(accel, anon_client, stored, ending):
    share = share_of(stored, max_downloads=1)
    if ending == "expired":
        Share.objects.filter(pk=share.pk).update(
            created_at=timezone.now() - timedelta(hours=2), expires_at=timezone.now() - timedelta(seconds=1)
        )
    elif ending == "unshared":
        share.unshare()
    else:
        assert share.count_download()
    response = anon_client.get(f"/s/{share.token}")
    assert response.status_code == 410
    assert "X-Accel-Redirect" not in response


def test_a_password_is_asked_for_before_anything_is_offloaded(accel, anon_client, stored):
    share = share_of(stored, password="open sesame")
    refused = anon_client.get(f"/s/{share.token}")
    assert refused.status_code == 403
    assert "X-Accel-Redirect" not in refused
    allowed = anon_client.get(f"/s/{share.token}", HTTP_X_SHARE_PASSWORD="open sesame")
    assert allowed.status_code == 200
    assert allowed["X-Accel-Redirect"].startswith("/_protected/")


def test_a_missing_file_is_a_410_not_an_offload(accel, anon_client, stored):
    share = share_of(stored)
    os.remove(stored.content.path)
    response = anon_client.get(f"/s/{share.token}")
    assert response.status_code == 410
    assert "X-Accel-Redirect" not in response
    assert counted(share) == 0


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"DOWNLOAD_OFFLOAD": "nginx"}, "DOWNLOAD_OFFLOAD must be x-accel-redirect, x-sendfile, presigned or empty"),
        ({"DOWNLOAD_OFFLOAD": "presigned"}, "DOWNLOAD_OFFLOAD=presigned needs a bucket (STORAGE_URL)"),
        (
            {"DOWNLOAD_OFFLOAD": "x-sendfile", "STORAGE_URL": "s3://files"},
            "x-accel-redirect or x-sendfile the local disk",
        ),
        ({"STORAGE_URL": "/srv/media"}, "STORAGE_URL must be empty or s3://"),
    ],
)
def test_a_bad_offload_or_storage_setting_stops_start_up(env, named):
    from tests.helpers import run_manage

    done = run_manage("check", DEBUG="true", **env)
    assert done.returncode != 0
    assert named in done.stderr


# --- through nginx ---------------------------------------------------------------


@pytest.fixture
def nginx_front(tmp_path, settings):
    """nginx on a free port in front of gunicorn (one worker) with offload on,
    configured exactly as docs/deployment.md shows."""
    with nginx_before_gunicorn(
        tmp_path, str(settings.MEDIA_ROOT), DOWNLOAD_OFFLOAD="x-accel-redirect", NUM_PROXIES="1"
    ) as port:
        yield port


def fetch(port: int, path: str, headers=None) -> tuple[int, dict, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", path, headers=headers or {})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


@pytest.mark.fault
@pytest.mark.django_db(transaction=True)
def test_through_nginx_the_bytes_come_from_nginx_and_the_rules_from_django(nginx_front, stored):
    share = share_of(stored, max_downloads=2)
    status, headers, body = fetch(nginx_front, f"/s/{share.token}")
    assert status == 200
    assert body == DATA
    assert headers["content-type"] == "application/pdf"
    assert headers["content-disposition"] == 'attachment; filename="Report 2026.pdf"'
    assert headers["content-security-policy"] == "sandbox"
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["etag"] == f'"{stored.sha256}"'
    assert headers["cache-control"] == "no-store"
    assert "x-accel-redirect" not in headers
    assert counted(share) == 1
    # A range goes to Django and is streamed from there.
    status, headers, body = fetch(nginx_front, f"/s/{share.token}", {"Range": "bytes=100-199"})
    assert (status, body) == (206, DATA[100:200])
    assert counted(share) == 1  # a range from a later byte costs its bytes, not a download
    assert fetch(nginx_front, f"/s/{share.token}")[2] == DATA
    assert counted(share) == 2
    # No whole copy is left: Django refuses, nginx sends nothing...
    status, _, body = fetch(nginx_front, f"/s/{share.token}")
    assert status == 410
    assert DATA not in body
    # ...but the budget's last bytes still serve a resume.
    status, _, body = fetch(nginx_front, f"/s/{share.token}", {"Range": "bytes=200-299"})
    assert (status, body) == (206, DATA[200:300])
    # The internal location cannot be reached by URL.
    assert fetch(nginx_front, f"/_protected/{stored.content.name}")[0] == 404


@pytest.mark.fault
@pytest.mark.django_db(transaction=True)
def test_through_nginx_an_expired_or_locked_link_sends_nothing(nginx_front, stored, settings):
    expired = share_of(stored)
    Share.objects.filter(pk=expired.pk).update(
        created_at=timezone.now() - timedelta(hours=2), expires_at=timezone.now() - timedelta(seconds=1)
    )
    status, _, body = fetch(nginx_front, f"/s/{expired.token}")
    assert status == 410
    assert DATA not in body
    # Hashed as the server checks it (the suite's fast hasher is not in its list).
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]
    locked = share_of(stored, password="open sesame")
    assert fetch(nginx_front, f"/s/{locked.token}")[0] == 403
    status, _, body = fetch(nginx_front, f"/s/{locked.token}", {"X-Share-Password": "open sesame"})
    assert (status, body) == (200, DATA)


def test_the_deployment_docs_show_the_locations_this_test_runs():
    import textwrap

    from tests.helpers import REPO_ROOT

    shown = textwrap.dedent(front.locations(Path("/srv/microcloud/media"), "127.0.0.1:8000"))
    assert shown.strip() in (REPO_ROOT / "docs" / "deployment.md").read_text()


def test_an_ephemeral_file_is_never_offloaded(accel, anon_client, stored):
    """Its bytes may go the moment its last download is counted: only a
    handle opened before the count (Django streaming) can still send them."""
    StoredFile.objects.filter(pk=stored.pk).update(delete_when_unshared=True)
    share = share_of(stored)
    response = anon_client.get(f"/s/{share.token}")
    assert response.status_code == 200
    assert "X-Accel-Redirect" not in response
    assert b"".join(response.streaming_content) == DATA
