"""One formatter for sizes and one for moments (pages.units), and the pages
that use them: the words the browser's formatter gets are the server's own
in each language, every moment of a share's page (its history's too) is a
<time> in one format, a share form reports a past date beside its other
errors, and an upload request's reversible Close is not styled as danger."""

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.template import Context, Template
from django.utils import timezone, translation

from collect.models import UploadRequest
from pages.units import file_size, moment, size_words
from sharing.models import Share

pytestmark = pytest.mark.django_db


def format_like_the_browser(size: int, words: dict) -> str:
    """pages/static/pages/units.js, step for step (the browser test runs the real one)."""
    if size < 1024:
        return words["bytes"][min(size, 2)].replace("{n}", str(size))
    step, value = 0, float(size)
    while value >= 1024 and step < len(words["steps"]):
        value /= 1024
        step += 1
    return words["steps"][step - 1].replace("{n}", f"{round(value, 1):.1f}".replace(".", words["decimal"]))


SIZES = [0, 1, 2, 39, 1023, 1024, 1280, 1331, 105_881, 10 * 1024**2 + 5, 3 * 1024**3, 7 * 1024**4, 9 * 1024**5]


@pytest.mark.parametrize("language", ["en", "fr"])
def test_the_browsers_words_give_back_the_servers_sizes(language):
    with translation.override(language):
        words = size_words()
        for size in SIZES:
            assert format_like_the_browser(size, words) == file_size(size)


def test_sizes_read_as_people_expect_in_english_and_french():
    with translation.override("en"):
        assert [file_size(39), file_size(105_881), file_size(1)] == ["39\xa0bytes", "103.4\xa0KB", "1\xa0byte"]
    with translation.override("fr"):
        assert [file_size(39), file_size(105_881)] == ["39\xa0octets", "103,4\xa0Kio"]


def test_a_moment_is_printed_to_the_second_in_utc_whatever_its_zone():
    from zoneinfo import ZoneInfo

    at = datetime(2030, 1, 31, 18, 30, 5, tzinfo=ZoneInfo("Asia/Tokyo"))
    assert moment(at) == "31 Jan 2030, 09:30:05 UTC"
    html = Template("{% load units %}{{ at|moment }}").render(Context({"at": at}))
    assert html == '<time class="local-time" datetime="2030-01-31T18:30:05+09:00">31 Jan 2030, 09:30:05 UTC</time>'


def times_of(html: str) -> list[str]:
    return re.findall(r'<time class="local-time" datetime="[^"]+">([^<]*)</time>', html)


def test_every_moment_of_a_share_page_and_its_history_is_one_time_element_in_one_format(alice_web, shared_file):
    share = Share.create_for(file=shared_file, expires_at=timezone.now() + timedelta(hours=1))
    share.set_expiry(share.expires_at + timedelta(hours=1))
    page = alice_web.get(f"/shares/{share.pk}/").content.decode()
    history = page.split('id="history-heading"', 1)[1]
    # Renewed "from ... to ..." and Created "expires ...": moments in the details too.
    assert len(times_of(history)) == 2 + 3
    assert re.search(r"from <time [^>]+>[^<]+</time> to <time ", history)
    assert re.search(r"expires <time [^>]+>[^<]+</time>", history)
    every = times_of(page)
    assert every
    assert all(re.fullmatch(r"\d{1,2} \w{3} \d{4}, \d\d:\d\d:\d\d UTC", text) for text in every)


def test_a_share_form_says_a_past_date_beside_a_bad_download_limit(alice_web, shared_file):
    response = alice_web.post(
        f"/files/{shared_file.pk}/share/",
        {"lifetime": "custom", "expires_local": "2020-01-01T10:00", "time_zone": "UTC", "max_downloads": "0"},
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "That time has already passed" in html
    assert "Ensure this value is greater than or equal to 1." in html
    assert not Share.objects.exists()


def test_an_upload_requests_close_is_not_a_danger_button_but_delete_is(alice_web, alice):
    upload_request = UploadRequest.create_for(owner=alice, expires_at=timezone.now() + timedelta(hours=1))
    html = alice_web.get("/requests/").content.decode()
    close = re.search(r'<button type="submit" class="([^"]+)">Close<', html)
    delete = re.search(rf'<a class="([^"]+)" href="/requests/{upload_request.pk}/delete/">Delete<', html)
    assert "danger" not in close.group(1).split()
    assert "danger" in delete.group(1).split()


def test_an_arrival_is_printed_to_the_second_as_every_other_moment(alice_web, alice):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from collect.receiving import receive_posted_file

    upload_request = UploadRequest.create_for(owner=alice, expires_at=datetime(2099, 1, 1, tzinfo=UTC))
    receive_posted_file(upload_request, SimpleUploadedFile("a.txt", b"hello"))
    every = times_of(alice_web.get("/requests/").content.decode())
    assert len(every) == 2  # open until, arrived
    assert all(re.fullmatch(r"\d{1,2} \w{3} \d{4}, \d\d:\d\d:\d\d UTC", text) for text in every)


def test_the_api_tokens_page_prints_its_moments_as_every_other(alice_web):
    alice_web.post("/account/token/", {"action": "create", "name": "laptop", "expires_in_days": "7"})
    every = times_of(alice_web.get("/account/token/").content.decode())
    assert len(every) == 2  # made on, expires on
    assert all(re.fullmatch(r"\d{1,2} \w{3} \d{4}, \d\d:\d\d:\d\d UTC", text) for text in every)
