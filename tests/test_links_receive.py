"""The server's part of an encrypted link's page (links/static/links/receive.js):
the service worker it registers is served under the link's path with its own
policy and no database query; the page's policy lets it show blob: images and
run that worker, and no other page's does; its files are sent as previews
(counting no download) up to a size, only on links without a limit; the page
itself holds no name of a file."""

import os

import pytest
from django.test import Client
from microcloud_cli import ece
from microcloud_cli.sealing import new_secret, seal_metadata

from links import previews
from links.answers import PAGE_CSP
from sharing.models import Share

HTML = {"Accept": "text/html"}
FILES = [{"name": "holiday.png", "type": "image/png", "size": 300}]


@pytest.fixture
def ciphertext(alice, make_file):
    return make_file(alice, name="encrypted-1", data=os.urandom(300 + 21 + 17), content_type="application/octet-stream")


def create(client, stored, **fields) -> str:
    response = client.post("/api/shares/", {"file": stored.pk, "expires_in": 3600, **fields}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["token"]


def encrypted(client, stored, **fields) -> str:
    return create(client, stored, sealed_metadata=seal_metadata(new_secret(), FILES, "hello"), **fields)


def test_the_worker_is_served_under_the_links_path_with_its_own_policy(db, django_assert_num_queries):
    with django_assert_num_queries(0):
        response = Client().get("/s/AnyToken_-1/receive.js")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/javascript; charset=utf-8"
    assert response["Content-Security-Policy"] == "default-src 'none'; script-src 'self'; connect-src 'self'"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert 'importScripts("/static/pages/ece.js");' in response.content.decode()
    assert Client().post("/s/AnyToken_-1/receive.js").status_code == 405
    assert Client().get("/s/not a token/receive.js").status_code == 404


def test_only_an_encrypted_links_page_may_show_blobs_and_run_a_worker(alice_client, ciphertext):
    page = Client().get(f"/s/{encrypted(alice_client, ciphertext)}", headers=HTML)
    policy = page["Content-Security-Policy"]
    assert "img-src 'self' data: blob:;" in policy
    assert "worker-src 'self';" in policy
    assert "script-src 'self';" in policy
    plain = Client().get(f"/s/{create(alice_client, ciphertext)}", headers=HTML)
    assert plain["Content-Security-Policy"] == PAGE_CSP
    assert "blob:" not in PAGE_CSP


def test_the_page_names_no_file_and_says_what_opens_it_without_javascript(alice_client, ciphertext):
    token = encrypted(alice_client, ciphertext)
    text = Client().get(f"/s/{token}", headers=HTML).content.decode()
    assert "encrypted-1" not in text
    assert "<title>Encrypted files · Microcloud</title>" in text
    assert "which needs JavaScript" in text
    assert "microcloud get" in text
    assert f'data-sealed-url="/s/{token}/sealed"' in text
    assert f'data-worker-url="/s/{token}/receive.js"' in text


def test_an_encrypted_links_files_are_sent_as_previews_counting_no_download(alice_client, ciphertext):
    token = encrypted(alice_client, ciphertext)
    response = Client().get(f"/s/{token}/files/1/preview")
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == ciphertext.content.open("rb").read()
    share = Share.objects.get(token=token)
    assert share.download_count == 0
    assert share.events.filter(kind="previewed").count() == 1


def test_no_preview_on_a_limited_link_nor_past_the_size_a_page_decrypts_whole(alice_client, ciphertext, monkeypatch):
    limited = encrypted(alice_client, ciphertext, max_downloads=1)
    response = Client().get(f"/s/{limited}/files/1/preview")
    assert response.status_code == 404
    assert b"no preview" in response.content
    assert Share.objects.get(token=limited).download_count == 0

    monkeypatch.setattr(previews, "SEALED_PREVIEW_CIPHERTEXT_MAX", ciphertext.size - 1)
    assert Client().get(f"/s/{encrypted(alice_client, ciphertext)}/files/1/preview").status_code == 404
    # A plain link's octet-stream file still has no preview.
    assert Client().get(f"/s/{create(alice_client, ciphertext)}/files/1/preview").status_code == 404


def test_the_largest_preview_is_a_20_mb_image_once_encrypted():
    assert ece.encrypted_size(previews.SEALED_PREVIEW_MAX) == previews.SEALED_PREVIEW_CIPHERTEXT_MAX


def test_the_workers_download_address_reached_without_it_says_how_to_get_there(db):
    page = Client().get("/s/AnyToken_-1/decrypted/2", headers=HTML)
    assert page.status_code == 404
    assert "open the whole link, with the part after #" in page.content.decode()
    line = Client().get("/s/AnyToken_-1/decrypted/2")
    assert line.status_code == 404
    assert line.content.startswith(b"This address saves a file decrypted by the link's page")
