"""The theme switch (pages/themes.py): a POST remembers the choice in a
cookie, and every page's <html> then carries it for the sheets to read."""

from datetime import timedelta

import pytest
from django.utils import timezone

from pages.themes import COOKIE, THEMES
from sharing.models import Share


@pytest.mark.parametrize("chosen", list(THEMES))
def test_it_remembers_the_theme_and_goes_back(client, db, chosen):
    response = client.post("/theme/", {"theme": chosen, "next": "/login/"})
    assert response.status_code == 302
    assert response["Location"] == "/login/"
    cookie = response.cookies[COOKIE]
    assert cookie.value == chosen
    assert cookie["max-age"] == 365 * 24 * 3600
    assert cookie["samesite"] == "Lax"
    assert f'data-theme="{chosen}"' in client.get("/login/").content.decode()


def test_every_page_with_the_header_or_footer_wears_the_theme_and_offers_the_switch(alice_web, shared_file):
    share = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1))
    alice_web.cookies[COOKIE] = "dark"
    for path in ("/", f"/shares/{share.pk}/", f"/s/{share.token}", "/no/such/page/"):
        page = alice_web.get(path, headers={"accept": "text/html"}).content.decode()
        assert '<html lang="en" data-theme="dark">' in page, path
        assert 'action="/theme/"' in page, path
        assert '<option value="dark" selected>Dark</option>' in page, path


def test_without_a_choice_the_system_decides(client, db):
    assert 'data-theme="system"' in client.get("/login/").content.decode()


def test_a_forged_cookie_is_the_systems_theme(client, db):
    client.cookies[COOKIE] = '"><script>'
    assert 'data-theme="system"' in client.get("/login/").content.decode()


@pytest.mark.parametrize("value", ["", "blue", "DARK"])
def test_an_unknown_theme_is_a_400_naming_the_themes(client, db, value):
    response = client.post("/theme/", {"theme": value, "next": "/login/"})
    assert response.status_code == 400
    assert response.content.decode() == "Choose a theme among: system, light, dark."
    assert COOKIE not in response.cookies


def test_it_goes_back_only_to_this_site(client, db):
    response = client.post("/theme/", {"theme": "dark", "next": "https://elsewhere.example/"})
    assert response["Location"] == "/"
    response = client.post("/theme/", {"theme": "dark"}, headers={"referer": "http://testserver/login/"})
    assert response["Location"] == "http://testserver/login/"


def test_it_takes_only_a_post(client, db):
    assert client.get("/theme/?theme=dark").status_code == 405


def test_the_form_in_french(client, db):
    client.cookies["django_language"] = "fr"
    page = client.get("/login/", headers={"accept-language": "fr"}).content.decode()
    assert ">Thème</label>" in page
    assert ">Sombre</option>" in page
