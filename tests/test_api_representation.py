"""The share representation is written out by hand (ShareSerializer.to_representation)
for speed; it must equal what the declared fields (the schema's source) produce."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework import serializers

from api.representations import ShareSerializer
from sharing.models import Share, ShareItem


def by_fields(share, context):
    """The representation DRF builds from ShareSerializer's declared fields."""
    return serializers.ModelSerializer.to_representation(ShareSerializer(context=context), share)


def variety(shared_file):
    """Shares in every state the API shows: active, past deadline, ended each way, limited, with a password."""
    now = timezone.now()
    soon = now + timedelta(hours=1)
    active = Share.create_for(file=shared_file, expires_at=soon)
    limited = Share.create_for(
        file=shared_file, expires_at=soon, max_downloads=3, password="pw", notify_first_download=True
    )
    Share.objects.filter(pk=limited.pk).update(download_count=2)
    unshared = Share.create_for(file=shared_file, expires_at=soon, remind_before_expiry=False)
    unshared.unshare()
    expired = Share.create_for(file=shared_file, expires_at=soon)
    Share.objects.filter(pk=expired.pk).update(
        created_at=now - timedelta(hours=2),
        expires_at=now - timedelta(hours=1, microseconds=1),
        status=Share.Status.EXPIRED,
        end_reason=Share.EndReason.EXPIRED,
        ended_at=now - timedelta(minutes=59, seconds=58, microseconds=123456),
    )
    overdue = Share.create_for(file=shared_file, expires_at=soon)
    Share.objects.filter(pk=overdue.pk).update(created_at=now - timedelta(hours=2), expires_at=now - timedelta(hours=1))
    orphan = Share.create_for(file=shared_file, expires_at=soon.replace(microsecond=0))
    ShareItem.objects.filter(share=orphan).delete()
    Share.objects.filter(pk=orphan.pk).update(status="unshared", end_reason="file_deleted", ended_at=now)
    return [active, limited, unshared, expired, overdue, orphan]


@pytest.mark.parametrize("with_request", [True, False])
def test_it_shows_what_the_declared_fields_show(shared_file, with_request):
    context = {"now": timezone.now()}
    if with_request:
        context["request"] = RequestFactory().get("/api/shares/")
    shares = [Share.objects.get(pk=share.pk) for share in variety(shared_file)]
    # The fresh instance create_for returns too: enum values, not yet read back.
    shares.append(Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(days=1)))

    for share in shares:
        fast = ShareSerializer(share, context=context).data
        assert list(fast.items()) == list(by_fields(share, context).items())
    page = ShareSerializer(shares, many=True, context=context).data
    assert [dict(item) for item in page] == [by_fields(share, context) for share in shares]


def test_it_shows_the_current_time_zone_as_the_fields_do(shared_file):
    share = Share.objects.get(pk=variety(shared_file)[3].pk)
    context = {"now": timezone.now()}
    with timezone.override("Europe/Paris"):
        fast = ShareSerializer(share, context=context).data
        assert fast == by_fields(share, context)
    assert fast["created_at"].endswith("+01:00") or fast["created_at"].endswith("+02:00")


def test_a_page_of_shares_is_read_in_two_queries(alice_client, shared_file):
    variety(shared_file)

    with CaptureQueriesContext(connection) as queries:
        response = alice_client.get("/api/shares/")

    assert response.status_code == 200
    assert response.json()["count"] == 6
    # The shares, then the ids of their files: the columns the list leaves
    # unread, and the files, are never read one share at a time.
    assert len(queries) == 2
