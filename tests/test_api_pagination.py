"""Pages read before the count (api.pagination.PageFirstPaginator): the
same pages, counts, links and errors as Django's Paginator, and no COUNT(*)
when the page itself tells the count."""

import pytest
from django.core.paginator import Paginator
from django.db import connection
from django.test.utils import CaptureQueriesContext

from api.pagination import PageFirstPaginator, StandardPagination

pytestmark = pytest.mark.django_db

PAGES = ["1", "2", "3", "4", "last", "0", "-1", "abc", "1.0", "2.5", "", "99999999999999999999999"]


def answers(client, monkeypatch, paginator_class):
    monkeypatch.setattr(StandardPagination, "django_paginator_class", paginator_class)
    seen = []
    for page in PAGES:
        for size in ("", "5"):
            response = client.get("/api/shares/", {"page": page, "page_size": size})
            seen.append((page, size, response.status_code, response.json()))
    return seen


@pytest.mark.parametrize("count", [0, 4, 5, 9, 10, 11, 50, 51])
def test_pages_are_djangos(alice_client, make_shares, monkeypatch, count):
    make_shares(count, 86400)

    assert answers(alice_client, monkeypatch, PageFirstPaginator) == answers(alice_client, monkeypatch, Paginator)


def count_queries(client, **params):
    with CaptureQueriesContext(connection) as queries:
        response = client.get("/api/shares/", params)
    assert response.status_code == 200
    # A COUNT query of its own (the page's rows carry a COUNT subquery of pending downloads).
    counts = [query for query in queries if query["sql"].upper().startswith("SELECT COUNT(")]
    return response.json()["count"], len(counts)


def test_only_a_full_page_is_counted(alice_client, make_shares):
    make_shares(12, 86400)

    assert count_queries(alice_client) == (12, 0)  # the only page
    assert count_queries(alice_client, page_size=5, page=3) == (12, 0)  # the last page
    assert count_queries(alice_client, page_size=5, page=2) == (12, 1)  # more may follow
    assert count_queries(alice_client, page_size=12) == (12, 1)
    assert count_queries(alice_client, page_size=5, page="last") == (12, 1)


@pytest.mark.parametrize("size", ["0", "501", "-1", "abc", "1.5", "", "\u0663"])
def test_a_page_size_outside_what_the_schema_says_is_a_400(alice_client, size):
    response = alice_client.get("/api/shares/", {"page_size": size})
    assert response.status_code == 400
    assert response.json() == {"page_size": [f"Give a whole number from 1 to 500, not {size!r}."]}


@pytest.mark.parametrize("size", ["1", "500"])
def test_the_bounds_themselves_are_accepted(alice_client, size):
    assert alice_client.get("/api/shares/", {"page_size": size}).status_code == 200


def test_the_schema_declares_the_page_bounds_and_their_answers(alice_client):
    schema = alice_client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    for path in ("/api/shares/", "/api/files/", "/api/webhooks/", "/api/shares/{id}/events/"):
        operation = schema["paths"][path]["get"]
        page = {p["name"]: p for p in operation["parameters"]}["page"]
        assert page["schema"]["minimum"] == 1, path
        assert {"400", "404"} <= set(operation["responses"]), path


def test_an_empty_page_number_is_refused_like_any_other_non_number(alice_client):
    for page in ("", "abc"):
        response = alice_client.get(f"/api/shares/?page={page}")
        assert response.status_code == 404, page
        assert response.json() == {"detail": "Invalid page."}
    assert alice_client.get("/api/shares/").status_code == 200  # no page at all: the first
