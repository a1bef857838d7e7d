"""The owner's pages and an end-to-end encrypted link, without a browser:
the server names it "Encrypted file" and marks it for the script that puts
the names back (tests/browser/test_share_encrypted.py does, in Chromium),
asks which links are encrypted once per page, and draws no QR code of a link
whose key it does not have. The "Share encrypted files" page says what it
needs before any script runs."""

import base64
import os
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from microcloud_cli.sealing import new_secret, seal_metadata

from sharing.models import Share, create_sealed_share, sealed_share_ids

pytestmark = pytest.mark.django_db


def blob() -> bytes:
    files = [{"name": "board-minutes.txt", "type": "text/plain", "size": 13}]
    text = seal_metadata(new_secret(), files, "")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@pytest.fixture
def encrypted(alice, make_file):
    def make(count: int = 1) -> Share:
        files = [
            make_file(alice, name=f"encrypted-{n}", data=os.urandom(60), content_type="application/octet-stream")
            for n in range(1, count + 1)
        ]
        return create_sealed_share(sealed_metadata=blob(), files=files, expires_at=timezone.now() + timedelta(hours=1))

    return make


def plain(stored) -> Share:
    return Share.create_for(file=stored, expires_at=timezone.now() + timedelta(hours=1))


def test_sealed_share_ids_names_the_encrypted_ones_in_one_query(encrypted, shared_file, django_assert_num_queries):
    sealed, other = encrypted(), plain(shared_file)
    with django_assert_num_queries(1):
        assert sealed_share_ids([sealed.pk, other.pk]) == {sealed.pk}
    assert sealed_share_ids([]) == set()


def test_the_dashboard_names_an_encrypted_link_neutrally_and_marks_it(alice_web, encrypted, shared_file):
    one, two, other = encrypted(), encrypted(2), plain(shared_file)
    page = alice_web.get("/").content.decode()
    assert f'data-sealed-share="{one.pk}"' in page
    assert f'data-sealed-share="{two.pk}"' in page
    assert f'data-sealed-share="{other.pk}"' not in page
    assert "<span data-sealed-name>Encrypted file</span>" in page
    assert "<span data-sealed-name>2 encrypted files</span>" in page
    assert f"<span data-sealed-name>{shared_file.name}</span>" in page
    assert "/static/web/sealed_names.js" in page
    assert 'href="/files/encrypted/"' in page


def test_the_dashboard_asks_once_however_many_links_are_encrypted(alice_web, encrypted):
    encrypted()

    def queries() -> list[str]:
        with CaptureQueriesContext(connection) as captured:
            assert alice_web.get("/").status_code == 200
        return [query["sql"] for query in captured.captured_queries if "sealed" in query["sql"]]

    assert len(queries()) == 1
    encrypted()
    encrypted(3)
    assert len(queries()) == 1


def test_the_live_answer_marks_new_encrypted_rows(alice_web, encrypted, shared_file):
    known = plain(shared_file)
    made = encrypted()
    answer = alice_web.get(f"/shares/live/?ids={known.pk},{made.pk}&after={known.pk}").json()
    assert f'data-sealed-share="{made.pk}"' in answer["new"][0]["html"]
    assert answer["shares"][str(made.pk)]["sealed"] is True
    assert answer["shares"][str(known.pk)]["sealed"] is False


def test_an_encrypted_links_page_has_no_qr_code_and_says_where_its_key_lives(alice_web, encrypted, shared_file):
    share = encrypted(2)
    page = alice_web.get(f"/shares/{share.pk}/").content.decode()
    assert f'data-sealed-share="{share.pk}"' in page
    assert "Link to encrypted files" in page
    assert "lives only in the browser that made the link" in page
    assert 'data-sealed-file="2"' in page
    assert "encrypted-1" not in page
    assert "<svg" not in page
    assert "<svg" in alice_web.get(f"/shares/{plain(shared_file).pk}/").content.decode()


def test_the_encrypted_share_page_says_what_it_needs_before_any_script(alice_web, client):
    response = alice_web.get("/files/encrypted/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "Encrypting in the browser needs JavaScript" in page
    assert '<form id="encrypted-form" class="stack" novalidate hidden' in page
    assert 'href="/#upload-heading"' in page
    assert "/static/web/encrypted_share.js" in page
    assert client.get("/files/encrypted/").status_code == 302  # signed out: to the log-in page
