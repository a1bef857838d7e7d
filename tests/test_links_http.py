"""The public link against RFC 9110 and RFC 6266: conditional requests, the
methods it answers, the attachment's names, and what a 416 says."""

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from sharing.models import Share
from storage.disposition import ascii_fallback, attachment

pytestmark = pytest.mark.django_db(transaction=True)  # responses are closed as a server would

DATA = b"0123456789" * 100


@pytest.fixture
def stored(alice, make_file):
    return make_file(alice, name="data.bin", data=DATA, content_type="application/octet-stream")


def share_of(stored, **options) -> Share:
    return Share.create_for(file=stored, expires_at=timezone.now() + timedelta(hours=1), **options)


def url(share: Share, name: str = "public-share") -> str:
    return reverse(name, args=[share.token])


def etag(share: Share) -> str:
    return f'"{share.file.sha256}"'


def left(share: Share) -> int:
    share.refresh_from_db()
    return share.bytes_left


@pytest.mark.parametrize("header", ["{etag}", "W/{etag}", '"other", {etag}', "*"])
def test_if_none_match_that_matches_is_304_and_sends_and_counts_nothing(stored, header):
    share = share_of(stored, max_downloads=1)
    response = Client().get(url(share), HTTP_IF_NONE_MATCH=header.format(etag=etag(share)))
    assert response.status_code == 304
    assert response.content == b""
    assert response["ETag"] == etag(share)
    assert response["Cache-Control"] == "no-store"
    assert left(share) == share.budget
    assert share.total_downloads == 0


def test_if_none_match_with_another_tag_sends_the_file(stored):
    share = share_of(stored)
    response = Client().get(url(share), HTTP_IF_NONE_MATCH='"something else"')
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == DATA


@pytest.mark.parametrize(("header", "status"), [("{etag}", 200), ("*", 200), ('"other"', 412), ("W/{etag}", 412)])
def test_if_match_compares_strongly(stored, header, status):
    share = share_of(stored, max_downloads=1)
    response = Client().get(url(share), HTTP_IF_MATCH=header.format(etag=etag(share)))
    assert response.status_code == status
    if status == 412:
        assert response["Content-Type"] == "text/plain; charset=utf-8"
        assert left(share) == share.budget  # nothing sent, nothing reserved
    else:
        assert b"".join(response.streaming_content) == DATA


def test_a_malformed_precondition_is_ignored(stored):
    share = share_of(stored)
    assert Client().get(url(share), HTTP_IF_MATCH="not-a-tag").status_code == 200


def test_the_links_state_decides_before_any_precondition(stored):
    share = share_of(stored)
    share.unshare()
    assert Client().get(url(share), HTTP_IF_NONE_MATCH=etag(share)).status_code == 410


@pytest.mark.parametrize("method", ["put", "patch", "delete", "options"])
@pytest.mark.parametrize(("name", "allowed"), [("public-share", "GET, HEAD, POST"), ("public-download", "GET, HEAD")])
def test_other_methods_get_405_with_allow(stored, method, name, allowed):
    share = share_of(stored)
    response = getattr(Client(enforce_csrf_checks=True), method)(url(share, name))
    assert response.status_code == 405
    assert response["Allow"] == allowed


def test_the_password_form_still_needs_its_csrf_token(stored):
    share = share_of(stored, password="open sesame")
    refused = Client(enforce_csrf_checks=True).post(url(share), {"password": "open sesame"})
    assert refused.status_code == 403
    assert Client().post(url(share), {"password": "open sesame"}).status_code == 303


@pytest.mark.parametrize(
    ("name", "header"),
    [
        ("Report 2026.pdf", 'attachment; filename="Report 2026.pdf"'),
        ("Bericht über.pdf", "attachment; filename=\"Bericht uber.pdf\"; filename*=utf-8''Bericht%20%C3%BCber.pdf"),
        ("日本.txt", "attachment; filename=\"download.txt\"; filename*=utf-8''%E6%97%A5%E6%9C%AC.txt"),
    ],
)
def test_a_name_that_is_not_plain_ascii_gets_an_ascii_fallback(alice, make_file, name, header):
    assert attachment(name) == header
    share = share_of(make_file(alice, name=name, data=b"x"))
    response = Client().get(url(share))
    assert response["Content-Disposition"] == header
    response.close()


def test_the_fallback_keeps_what_it_can_and_never_needs_escaping():
    assert ascii_fallback("naïve résumé.docx") == "naive resume.docx"
    assert ascii_fallback('quote"back\\slash.txt') == "quote_back_slash.txt"
    assert ascii_fallback("日本") == "download"


def test_an_unsatisfiable_range_says_why_in_plain_text(stored):
    share = share_of(stored)
    response = Client().get(url(share), HTTP_RANGE="bytes=5000-")
    assert response.status_code == 416
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response.content == b"The range starts past the end of the file (1000 bytes).\n"
