"""GET/HEAD /s/<token>: the public link, checked against the clock of the request."""

from datetime import UTC, datetime, timedelta

import pytest
from django.core.files.storage import FileSystemStorage
from django.db import OperationalError
from django.test import Client
from django.utils import timezone
from freezegun import freeze_time

from sharing.models import Share, StoredFile, delete_file, expire_overdue

pytestmark = pytest.mark.django_db

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
DATA = b"the shared bytes\n" * 64


@pytest.fixture
def client():
    """An anonymous browser that enforces CSRF like a real one."""
    return Client(enforce_csrf_checks=True)


@pytest.fixture
def clock():
    with freeze_time(T0) as frozen:
        yield frozen


@pytest.fixture
def stored(alice, make_file):
    return make_file(alice, "Q3 report.txt", DATA, "text/plain")


def share_of(stored, lifetime=timedelta(hours=1)) -> Share:
    return Share.create_for(file=stored, expires_at=timezone.now() + lifetime)


def link(share) -> str:
    return f"/s/{share.token}"


def downloads(share) -> int:
    share.refresh_from_db()
    return share.total_downloads


def body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


# --- serving ------------------------------------------------------------------


def test_get_streams_the_file_and_counts(client, stored):
    share = share_of(stored)

    response = client.get(link(share))

    assert response.status_code == 200
    assert body(response) == DATA
    assert response["Content-Type"] == "text/plain"
    assert response["Content-Length"] == str(len(DATA))
    assert response["Content-Disposition"] == 'attachment; filename="Q3 report.txt"'
    assert response["Cache-Control"] == "no-store"
    assert downloads(share) == 1
    assert client.get(link(share)).status_code == 200
    assert downloads(share) == 2


def test_non_ascii_name_uses_rfc6266_filename_star(client, alice, make_file):
    share = share_of(make_file(alice, "naïve plan 😀.pdf", b"%PDF", "application/pdf"))

    response = client.get(link(share))

    assert response.status_code == 200
    assert response["Content-Disposition"] == (
        "attachment; filename=\"naive plan _.pdf\"; filename*=utf-8''na%C3%AFve%20plan%20%F0%9F%98%80.pdf"
    )
    assert response["Content-Type"] == "application/pdf"
    assert response["Content-Length"] == "4"


def test_head_checks_but_does_not_count(client, stored):
    share = share_of(stored)

    response = client.head(link(share))

    assert response.status_code == 200
    assert response["Content-Length"] == str(len(DATA))
    assert response["Content-Disposition"] == 'attachment; filename="Q3 report.txt"'
    assert downloads(share) == 0


def test_no_account_needed_and_any_account_works(stored, bob_client):
    share = share_of(stored)

    assert Client().get(link(share)).status_code == 200
    assert bob_client.get(link(share)).status_code == 200
    assert downloads(share) == 2


@pytest.mark.parametrize("method", ["put", "patch", "delete"])
def test_unsafe_methods_are_405_and_not_counted(stored, method):
    share = share_of(stored)

    response = getattr(Client(), method)(link(share))

    assert response.status_code == 405
    assert downloads(share) == 0


def test_a_post_is_a_password_attempt_and_never_counts(stored):
    share = share_of(stored)

    response = Client(enforce_csrf_checks=True).post(link(share), {"password": "guess"})

    assert response.status_code == 403  # no CSRF token
    assert downloads(share) == 0
    assert Client().post(link(share), {"password": "guess"}).status_code == 403  # no password to match
    assert downloads(share) == 0


# --- refusals -----------------------------------------------------------------


def test_unknown_token_is_404(client, stored):
    share_of(stored)

    response = client.get("/s/" + "A" * 43)

    assert response.status_code == 404
    assert response.content == b"No such link.\n"


@pytest.mark.parametrize("path", ["/s/", "/s/not.a.token", "/s/" + "a" * 65, "/s/abc/"])
def test_malformed_token_is_404(client, path):
    assert client.get(path).status_code == 404


def test_one_second_before_expiry_is_served_one_second_after_is_gone(client, stored, clock):
    share = share_of(stored, timedelta(seconds=60))

    clock.move_to(T0 + timedelta(seconds=59))
    before = client.get(link(share))
    clock.move_to(T0 + timedelta(seconds=61))
    after = client.get(link(share))

    assert before.status_code == 200
    assert body(before) == DATA
    assert after.status_code == 410
    assert after.content == b"This link has expired.\n"
    assert after["Content-Type"] == "text/plain; charset=utf-8"
    # No daemon ran: the request's own clock refused it.
    share.refresh_from_db()
    assert (share.status, share.total_downloads) == ("active", 1)


def test_at_the_exact_deadline_it_is_gone(client, stored, clock):
    share = share_of(stored, timedelta(seconds=60))
    clock.move_to(share.expires_at)

    assert client.get(link(share)).status_code == 410
    assert client.head(link(share)).status_code == 410


def test_head_after_expiry_is_410(client, stored, clock):
    share = share_of(stored, timedelta(seconds=60))
    clock.tick(61)

    assert client.head(link(share)).status_code == 410


def test_daemon_expired_share_is_410(client, stored, clock):
    share = share_of(stored, timedelta(seconds=1))
    clock.tick(2)
    len(expire_overdue(timezone.now(), 10_000))

    response = client.get(link(share))

    assert response.status_code == 410
    assert response.content == b"This link has expired.\n"


def test_unshared_share_is_410(client, stored):
    share = share_of(stored)
    share.unshare()

    response = client.get(link(share))

    assert response.status_code == 410
    assert response.content == b"This link has been unshared.\n"
    assert downloads(share) == 0


def test_share_of_a_deleted_file_is_410(client, stored):
    share = share_of(stored)
    delete_file(stored)

    response = client.get(link(share))

    assert response.status_code == 410
    assert response.content == b"The shared file is no longer available.\n"


def test_active_share_whose_file_row_is_gone_is_410(client, stored):
    share = share_of(stored)
    # A bare delete (not delete_with_shares) leaves the share active, file null.
    StoredFile.objects.filter(pk=stored.pk).delete()

    response = client.get(link(share))

    assert response.status_code == 410
    assert downloads(share) == 0


def test_missing_bytes_are_410_and_not_counted(client, stored):
    share = share_of(stored)
    stored.content.storage.delete(stored.content.name)

    get = client.get(link(share))
    head = client.head(link(share))

    assert (get.status_code, head.status_code) == (410, 410)
    assert get.content == b"The shared file is no longer available.\n"
    assert downloads(share) == 0


def test_expiry_during_the_open_is_caught_by_the_final_check(client, stored, clock, monkeypatch):
    """The decisive check is the counted UPDATE, made after the file is open."""
    share = share_of(stored, timedelta(seconds=10))
    clock.move_to(T0 + timedelta(seconds=9.5))
    original_open = FileSystemStorage.open

    def slow_open(self, name, mode="rb"):
        clock.tick(1)  # the deadline passes while the disk answers
        return original_open(self, name, mode)

    monkeypatch.setattr(FileSystemStorage, "open", slow_open)

    response = client.get(link(share))

    assert response.status_code == 410
    assert response.content == b"This link has expired.\n"
    assert downloads(share) == 0


def test_a_busy_database_is_503_not_500(client, stored, monkeypatch):
    share = share_of(stored)

    def locked(self, **kwargs):
        raise OperationalError("database is locked")

    monkeypatch.setattr(Share, "reserve_bytes", locked)

    response = client.get(link(share))

    assert response.status_code == 503
    assert response["Retry-After"] == "1"


# --- a download racing an unshare, ordered deterministically ----------------------------
# The threaded version, with real concurrent requests, is in test_concurrency.py.


def test_unshare_committed_first_means_the_download_is_refused(client, alice_client, stored):
    share = share_of(stored)

    assert alice_client.delete(f"/api/shares/{share.pk}/").status_code == 204
    response = client.get(link(share))

    assert response.status_code == 410
    assert downloads(share) == 0


def test_download_counted_first_is_served_even_if_unshared_before_it_finishes(client, alice_client, stored):
    share = share_of(stored)

    response = client.get(link(share))  # counted: the bytes are now on their way
    assert alice_client.delete(f"/api/shares/{share.pk}/").status_code == 204

    assert response.status_code == 200
    assert body(response) == DATA
    assert downloads(share) == 1
    assert client.get(link(share)).status_code == 410
    assert downloads(share) == 1


def test_unshare_between_lookup_and_count_is_refused(client, stored, monkeypatch):
    """An unshare landing after the first look but before the count wins."""
    share = share_of(stored)
    original_open = FileSystemStorage.open

    def open_then_unshare(self, name, mode="rb"):
        handle = original_open(self, name, mode)
        Share.objects.get(pk=share.pk).unshare()
        return handle

    monkeypatch.setattr(FileSystemStorage, "open", open_then_unshare)

    response = client.get(link(share))

    assert response.status_code == 410
    assert response.content == b"This link has been unshared.\n"
    assert downloads(share) == 0
