"""An upload request's rules, as the database asks them (request_open_q, due,
room_q) and as a row in hand does (UploadRequest.is_open), agree: around
the deadline, for ended requests, and at the edges of the limits."""

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.template.defaultfilters import filesizeformat
from django.utils import timezone

from collect.models import ReceivedFile, UploadRequest, places_left_q, request_open_q, room_q
from collect.places import RequestEnded, RequestFull, give_back, take_place

pytestmark = pytest.mark.django_db


def new_request(owner, **fields) -> UploadRequest:
    return UploadRequest.create_for(owner=owner, expires_at=timezone.now() + timedelta(hours=1), **fields)


@pytest.mark.parametrize("offset", [timedelta(microseconds=-1), timedelta(0), timedelta(microseconds=1)])
def test_open_in_python_and_in_the_database_agree_around_the_deadline(alice, offset):
    upload_request = new_request(alice)
    now = upload_request.expires_at + offset
    open_in_database = UploadRequest.objects.filter(request_open_q(now)).exists()
    assert upload_request.is_open(now) is open_in_database
    assert UploadRequest.objects.due(now).exists() is not open_in_database  # nobody ended it
    assert open_in_database is (offset < timedelta(0))  # at the deadline it is over


@pytest.mark.parametrize("reason", UploadRequest.EndReason.values)
@pytest.mark.parametrize("offset", [timedelta(hours=-1), timedelta(0), timedelta(hours=1)])
def test_an_ended_request_is_closed_both_ways_and_never_due(alice, reason, offset):
    upload_request = new_request(alice)
    ended_at = timezone.now()
    UploadRequest.objects.filter(pk=upload_request.pk).update(ended_at=ended_at, end_reason=reason)
    upload_request.refresh_from_db()
    now = upload_request.expires_at + offset
    assert upload_request.is_open(now) is False
    assert not UploadRequest.objects.filter(request_open_q(now)).exists()
    assert not UploadRequest.objects.due(now).exists()  # the daemon has nothing left to end


def fits(upload_request: UploadRequest, length: int) -> bool:
    return UploadRequest.objects.filter(pk=upload_request.pk).filter(room_q(length)).exists()


def taken(upload_request: UploadRequest, files: int, size: int) -> UploadRequest:
    UploadRequest.objects.filter(pk=upload_request.pk).update(files_taken=files, bytes_taken=size)
    return upload_request


@pytest.mark.parametrize(
    ("limits", "files", "size", "length", "expected"),
    [
        # No limits: anything fits, however much was taken.
        ({}, 0, 0, 0, True),
        ({}, 10**6, 2**50, 2**50, True),
        # max_files: the last place, then none.
        ({"max_files": 3}, 2, 0, 1, True),
        ({"max_files": 3}, 3, 0, 1, False),
        ({"max_files": 1}, 0, 0, 10**9, True),
        ({"max_files": 1}, 1, 0, 0, False),  # an empty file takes a place too
        # max_bytes: exactly up to the limit, not a byte over.
        ({"max_bytes": 100}, 0, 0, 100, True),
        ({"max_bytes": 100}, 0, 0, 101, False),
        ({"max_bytes": 100}, 4, 60, 40, True),
        ({"max_bytes": 100}, 4, 60, 41, False),
        ({"max_bytes": 100}, 4, 100, 0, False),  # full to the byte: full, not even an empty file fits
        ({"max_bytes": 100}, 4, 100, 1, False),
        # Both: each must hold.
        ({"max_files": 2, "max_bytes": 100}, 1, 50, 50, True),
        ({"max_files": 2, "max_bytes": 100}, 2, 50, 10, False),
        ({"max_files": 2, "max_bytes": 100}, 1, 50, 51, False),
        # A limit larger than any 32-bit number, in the database's own arithmetic.
        ({"max_bytes": 2**62}, 0, 2**62 - 1, 1, True),
        ({"max_bytes": 2**62}, 0, 2**62 - 1, 2, False),
    ],
)
def test_room_in_the_database_follows_the_limits(alice, limits, files, size, length, expected):
    upload_request = taken(new_request(alice, **limits), files, size)
    assert fits(upload_request, length) is expected
    by_hand = (limits.get("max_files") is None or files < limits["max_files"]) and (
        limits.get("max_bytes") is None or (size + length <= limits["max_bytes"] and size < limits["max_bytes"])
    )
    assert by_hand is expected  # the table itself says what the limits mean


def test_it_names_a_request_by_its_title_or_else_by_its_number(alice):
    assert str(new_request(alice, title="Scans for the audit")) == "Scans for the audit"
    untitled = new_request(alice)
    assert str(untitled) == f"Upload request {untitled.pk}"


def test_it_never_overwrites_a_request_when_given_the_id_of_one(alice):
    kept = new_request(alice, title="Kept")
    with pytest.raises(IntegrityError), transaction.atomic():
        new_request(alice, id=kept.pk, title="Overwritten")
    assert UploadRequest.objects.get(pk=kept.pk).title == "Kept"


def test_it_says_a_request_full_to_the_byte_is_full(alice):
    upload_request = new_request(alice, max_bytes=10)
    take_place(upload_request.pk, "first", "a.pdf", 10)
    for length in (1, 0):
        with pytest.raises(RequestFull) as refused:
            take_place(upload_request.pk, f"next-{length}", "b.pdf", length)
        assert refused.value.message == "This request is full: it takes no more files."


def test_it_says_how_much_room_is_left_for_a_file_too_big_for_it(alice):
    upload_request = new_request(alice, max_bytes=10)
    take_place(upload_request.pk, "first", "a.pdf", 4)
    with pytest.raises(RequestFull) as refused:
        take_place(upload_request.pk, "second", "b.pdf", 7)
    assert refused.value.message.endswith(f"has left ({filesizeformat(6)}).")


@pytest.mark.parametrize(
    ("limits", "files", "size", "full"),
    [
        ({}, 10**6, 2**50, False),
        ({"max_files": 3}, 2, 0, False),
        ({"max_files": 3}, 3, 0, True),
        ({"max_bytes": 100}, 9, 99, False),
        ({"max_bytes": 100}, 9, 100, True),
        ({"max_files": 2, "max_bytes": 100}, 2, 10, True),
        ({"max_files": 2, "max_bytes": 100}, 1, 100, True),
        ({"max_files": 2, "max_bytes": 100}, 1, 99, False),
    ],
)
def test_full_in_python_and_in_the_database_agree(alice, limits, files, size, full):
    upload_request = taken(new_request(alice, **limits), files, size)
    upload_request.refresh_from_db()
    assert upload_request.is_full() is full
    assert UploadRequest.objects.filter(places_left_q(), pk=upload_request.pk).exists() is not full
    assert fits(upload_request, 0) is not full  # a full request takes nothing, not even an empty file


def test_it_gives_back_an_unfinished_uploads_place_once(alice):
    upload_request = new_request(alice, max_files=2, max_bytes=10)
    take_place(upload_request.pk, "first", "a.pdf", 4)
    assert give_back("first") is True
    assert give_back("first") is False
    upload_request.refresh_from_db()
    assert (upload_request.files_taken, upload_request.bytes_taken) == (0, 0)
    assert not ReceivedFile.objects.exists()


def test_it_says_a_request_past_its_deadline_ended_rather_than_busy(alice):
    upload_request = new_request(alice)
    take_place(upload_request.pk, "first", "a.pdf", 4, arriving_at_most=1)
    UploadRequest.objects.filter(pk=upload_request.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(RequestEnded):
        take_place(upload_request.pk, "second", "b.pdf", 4, arriving_at_most=1)
