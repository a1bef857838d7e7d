"""The public link for people: landing page, ended pages, passwords.

Browsers (Accept: text/html) get pages; curl, wget and scripts keep getting
the file at /s/<token> and one plain line when it is refused.
"""

from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from freezegun import freeze_time

from links.answers import wants_html
from links.tickets import UNLOCK_COOKIE
from sharing.models import Share, delete_file

pytestmark = pytest.mark.django_db

BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8"
T0 = datetime(2026, 11, 22, 14, 3, tzinfo=UTC)


def share_of(stored, seconds=3600, **options) -> Share:
    return Share.create_for(file=stored, expires_at=timezone.now() + timedelta(seconds=seconds), **options)


def page(share_or_token, client=None, **headers):
    token = getattr(share_or_token, "token", share_or_token)
    return (client or Client()).get(reverse("public-share", args=[token]), HTTP_ACCEPT=BROWSER, **headers)


def count(share: Share) -> int:
    share.refresh_from_db()
    return share.total_downloads


@pytest.mark.parametrize(
    ("accept", "html"),
    [
        (BROWSER, True),
        ("text/html", True),
        ("*/*", False),
        ("", False),
        ("application/json", False),
        ("text/html;q=0", False),
        ("text/html;q=abc, */*", False),
    ],
)
def test_only_clients_that_ask_for_html_get_pages(rf, accept, html):
    assert wants_html(rf.get("/", HTTP_ACCEPT=accept)) is html


def test_the_landing_page_says_who_shared_it_and_the_checksum(alice, make_file, settings):
    stored = make_file(alice, name="notes.txt", data=b"some notes")
    share = share_of(stored)
    text = page(share).content.decode()
    assert "Shared with you by alice." in text  # no full name: the username
    assert f'<code class="checksum">{stored.sha256}</code>' in text
    alice.first_name, alice.last_name = "Alice", "Martin"
    alice.save()
    assert "Shared with you by Alice Martin." in page(share).content.decode()
    settings.LINK_SHOWS_OWNER = False
    assert "Shared with you by" not in page(share).content.decode()


def test_the_landing_page_shows_the_file_and_counts_nothing(alice, make_file):
    stored = make_file(alice, name="Quarterly report.pdf", data=b"x" * 2048, content_type="application/pdf")
    share = share_of(stored, max_downloads=3)
    response = page(share)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    text = response.content.decode()
    for expected in ("Quarterly report.pdf", "2.0\u00a0KB", "application/pdf", 'class="countdown"', "3"):
        assert expected in text
    assert f'href="{reverse("public-download", args=[share.token])}"' in text
    # The page is in the reader's language; its switcher's form carries a CSRF token (Cookie).
    assert response["Vary"] == "Accept, Cookie, Accept-Language"
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert "unsafe-inline" not in response["Content-Security-Policy"]
    assert count(share) == 0


def test_scripts_still_get_the_file_at_the_link(shared_file):
    share = share_of(shared_file)
    response = Client().get(reverse("public-share", args=[share.token]), HTTP_ACCEPT="*/*")
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"hello, world\n"
    assert response["Vary"] == "Accept"
    assert count(share) == 1


def test_the_download_button_always_downloads(shared_file):
    share = share_of(shared_file)
    response = Client().get(reverse("public-download", args=[share.token]), HTTP_ACCEPT=BROWSER)
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith("attachment")
    assert count(share) == 1


@pytest.mark.parametrize(
    ("ending", "status", "says"),
    [
        ("time", 410, 'stopped working on <time class="local-time" datetime="2026-11-22T14:03:00+00:00">22 Nov 2026'),
        ("limit", 410, "Its downloads ran out on"),
        ("unshare", 410, "Its owner stopped sharing it on"),
        ("file", 410, "deleted the file"),
    ],
)
def test_ended_links_get_a_page_that_says_what_happened_and_when(shared_file, ending, status, says):
    with freeze_time(T0 - timedelta(hours=1)) as frozen:
        share = Share.create_for(file=shared_file, expires_at=T0)
        frozen.tick(timedelta(minutes=30))
        if ending == "time":
            frozen.move_to(T0 + timedelta(minutes=5))
        elif ending == "limit":
            share.change(max_downloads=1)
            share.count_download()
        elif ending == "unshare":
            share.unshare()
        else:
            delete_file(shared_file)
        response = page(share)
        plain = Client().get(reverse("public-share", args=[share.token]))
    assert response.status_code == status
    assert says in response.content.decode()
    assert "ask the person who sent you the link for a new one" in response.content.decode()
    assert plain.status_code == status
    assert plain["Content-Type"].startswith("text/plain")


def test_an_unknown_link_gets_a_404_page(db):
    response = page("no-such-token")
    assert response.status_code == 404
    assert "No such link" in response.content.decode()


# --- passwords -----------------------------------------------------------------


def test_a_protected_link_asks_for_its_password_and_hides_the_file(alice, make_file):
    share = share_of(make_file(alice, name="secret-plans.txt"), password="open sesame")
    response = page(share)
    assert response.status_code == 200
    text = response.content.decode()
    assert 'type="password"' in text
    assert "csrfmiddlewaretoken" in text
    assert "secret-plans.txt" not in text
    assert Client().get(reverse("public-download", args=[share.token])).status_code == 403
    assert count(share) == 0


def test_the_right_password_unlocks_the_link_for_this_browser(alice, make_file):
    share = share_of(make_file(alice, name="plans.txt"), password="open sesame")
    browser = Client(enforce_csrf_checks=True)
    form = page(share, browser)
    token = form.cookies["csrftoken"].value
    wrong = browser.post(
        reverse("public-share", args=[share.token]), {"password": "nope", "csrfmiddlewaretoken": token}
    )
    assert wrong.status_code == 403
    assert "Wrong password" in wrong.content.decode()
    right = browser.post(
        reverse("public-share", args=[share.token]), {"password": "open sesame", "csrfmiddlewaretoken": token}
    )
    assert right.status_code == 303
    assert right.cookies[UNLOCK_COOKIE]["path"] == reverse("public-share", args=[share.token])
    assert "plans.txt" in page(share, browser).content.decode()
    assert browser.get(reverse("public-download", args=[share.token])).status_code == 200
    assert count(share) == 1


def test_changing_the_password_revokes_unlocked_browsers(alice, make_file):
    share = share_of(make_file(alice), password="first")
    browser = Client()
    browser.post(reverse("public-share", args=[share.token]), {"password": "first"})
    assert browser.get(reverse("public-download", args=[share.token])).status_code == 200
    share.change(password="second")
    assert browser.get(reverse("public-download", args=[share.token])).status_code == 403


@pytest.mark.parametrize("password", ["open sesame", "p\u00e4ss \u2603 \U0001f511", "x" * 500])
def test_scripts_send_the_password_in_a_header(alice, make_file, password):
    share = share_of(make_file(alice), password=password)
    url = reverse("public-share", args=[share.token])
    assert Client().get(url).status_code == 403
    raw = password.encode().decode("latin-1")  # how a header's bytes reach Django
    ok = Client().get(url, HTTP_X_SHARE_PASSWORD=raw)
    assert ok.status_code == 200
    assert Client().get(url, HTTP_X_SHARE_PASSWORD="wrong").status_code == 403
    assert count(share) == 1


@pytest.mark.parametrize("odd", ["\x00", "\r\n", "\u00ff\u00fe", "", "\U0001f511" * 300])
def test_odd_bytes_in_passwords_are_just_wrong_never_a_500(alice, make_file, odd):
    share = share_of(make_file(alice), password="real")
    url = reverse("public-share", args=[share.token])
    assert Client().post(url, {"password": odd}).status_code == 403
    assert Client().get(url, HTTP_X_SHARE_PASSWORD=odd).status_code == 403
    assert Client().get(url, HTTP_X_SHARE_PASSWORD="\udcff").status_code == 403  # not UTF-8 at all
    assert not share.check_password("\udcff")


def test_a_password_for_a_link_that_does_not_exist_gets_the_wrong_password_answer(alice, make_file):
    share = share_of(make_file(alice), password="real")
    real = Client().post(reverse("public-share", args=[share.token]), {"password": "guess"})
    missing = Client().post(reverse("public-share", args=["x" * 43]), {"password": "guess"})
    assert real.status_code == missing.status_code == 403
    assert "Wrong password" in missing.content.decode()


# --- limits ----------------------------------------------------------------------


def test_the_eleventh_wrong_password_for_a_link_is_a_429(alice, make_file):
    share = share_of(make_file(alice), password="real")
    url = reverse("public-share", args=[share.token])
    answers = [Client().post(url, {"password": f"guess {n}"}).status_code for n in range(10)]
    assert answers == [403] * 10
    refused = Client().post(url, {"password": "guess 11"})
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 660
    assert Client().post(url, {"password": "real"}).status_code == 429  # the link is closed to guesses
    assert Client().get(url, HTTP_X_SHARE_PASSWORD="real").status_code == 429  # headers too


def test_right_passwords_do_not_use_up_the_limit(alice, make_file):
    share = share_of(make_file(alice), password="real")
    url = reverse("public-share", args=[share.token])
    for _ in range(15):
        assert Client().get(url, HTTP_X_SHARE_PASSWORD="real").status_code == 200


def test_one_address_gets_thirty_wrong_passwords_across_links(alice, make_file):
    stored = make_file(alice)
    links = [reverse("public-share", args=[share_of(stored, password="real").token]) for _ in range(4)]
    answers = [Client().post(links[n % 4], {"password": "nope"}).status_code for n in range(30)]
    assert answers == [403] * 30
    assert Client().post(links[0], {"password": "nope"}).status_code == 429
    other = Client(REMOTE_ADDR="192.0.2.99").post(links[0], {"password": "nope"})
    assert other.status_code == 403  # another client address still may try


def test_requests_to_links_are_limited_per_client_address(settings, shared_file):
    settings.LINK_RATE_LIMIT = 3
    share = share_of(shared_file)
    url = reverse("public-share", args=[share.token])
    assert [Client().head(url).status_code for _ in range(3)] == [200, 200, 200]
    plain = Client().get(url)
    assert plain.status_code == 429
    assert plain["Content-Type"].startswith("text/plain")
    assert int(plain["Retry-After"]) >= 1
    assert page(share).status_code == 429  # a page for browsers, the same status
    assert count(share) == 0
