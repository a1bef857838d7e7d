"""The project's own pages: a styled 404 for any address that names no page
(outside /api/, which answers JSON), a 500 page that needs nothing to
render, and a favicon, so no page asks for a file that is not there."""

import pytest
from django.contrib.staticfiles import finders
from django.template.loader import get_template
from django.test import Client
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_an_unknown_page_gets_the_styled_404():
    response = Client().get("/no/such/page/", HTTP_ACCEPT="text/html")
    assert response.status_code == 404
    page = response.content.decode()
    assert "<h1>Page not found</h1>" in page
    assert "link.css" in page
    assert 'rel="icon"' in page


def test_the_500_page_renders_without_a_request_or_context():
    page = get_template("500.html").render({})
    assert "<h1>Something went wrong</h1>" in page
    assert "nothing you sent was half saved" in page


def test_the_favicon_exists_and_old_clients_are_sent_to_it():
    assert finders.find("favicon.svg") is not None
    response = Client().get("/favicon.ico")
    assert response.status_code == 301
    assert response["Location"].endswith("favicon.svg")


@pytest.mark.parametrize("path", ["/s/no-such-token", "web:login"])
def test_pages_name_their_icon(path):
    url = path if path.startswith("/") else reverse(path)
    page = Client().get(url, HTTP_ACCEPT="text/html").content.decode()
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in page


def test_the_admin_log_in_page_has_its_heading():
    page = Client().get(reverse("admin:login")).content.decode()
    assert "<h1>Log in</h1>" in page
