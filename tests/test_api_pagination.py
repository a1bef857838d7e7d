"""Pages read before the count (sharing.pagination.PageFirstPaginator): the
same pages, counts, links and errors as Django's Paginator, and no COUNT(*)
when the page itself tells the count."""

from datetime import timedelta

import pytest
from django.core.paginator import Paginator
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from sharing.models import Share
from sharing.pagination import PageFirstPaginator, StandardPagination

pytestmark = pytest.mark.django_db

PAGES = ["1", "2", "3", "4", "last", "0", "-1", "abc", "1.0", "2.5", "", "99999999999999999999999"]


def make(shared_file, count):
    now = timezone.now()
    Share.objects.bulk_create(
        Share(file=shared_file, owner=shared_file.owner, created_at=now, updated_at=now, expires_at=now + timedelta(1))
        for _ in range(count)
    )


def answers(client, monkeypatch, paginator_class):
    monkeypatch.setattr(StandardPagination, "django_paginator_class", paginator_class)
    seen = []
    for page in PAGES:
        for size in ("", "5"):
            response = client.get("/api/shares/", {"page": page, "page_size": size})
            seen.append((page, size, response.status_code, response.json()))
    return seen


@pytest.mark.parametrize("count", [0, 4, 5, 9, 10, 11, 50, 51])
def test_pages_are_djangos(alice_client, shared_file, monkeypatch, count):
    make(shared_file, count)

    assert answers(alice_client, monkeypatch, PageFirstPaginator) == answers(alice_client, monkeypatch, Paginator)


def count_queries(client, **params):
    with CaptureQueriesContext(connection) as queries:
        response = client.get("/api/shares/", params)
    assert response.status_code == 200
    # A COUNT query of its own (the page's rows carry a COUNT subquery of pending downloads).
    counts = [query for query in queries if query["sql"].upper().startswith("SELECT COUNT(")]
    return response.json()["count"], len(counts)


def test_only_a_full_page_is_counted(alice_client, shared_file):
    make(shared_file, 12)

    assert count_queries(alice_client) == (12, 0)  # the only page
    assert count_queries(alice_client, page_size=5, page=3) == (12, 0)  # the last page
    assert count_queries(alice_client, page_size=5, page=2) == (12, 1)  # more may follow
    assert count_queries(alice_client, page_size=12) == (12, 1)
    assert count_queries(alice_client, page_size=5, page="last") == (12, 1)
