"""The public link's pages in a real browser: what a recipient sees, clicks
and downloads, with and without JavaScript, on a phone, and with axe-core."""

import re
from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from sharing.models import Share
from tests.browser.helpers import axe_check, no_foreign_requests, save_screenshot

DATA = b"%PDF-1.4\n" + bytes(range(256)) * 8  # 2,057 bytes


@pytest.fixture
def report(alice, make_file):
    return make_file(alice, name="Quarterly report.pdf", data=DATA, content_type="application/pdf")


def share_of(stored, seconds: float = 3600, **options) -> Share:
    return Share.create_for(file=stored, expires_at=timezone.now() + timedelta(seconds=seconds), **options)


def count(share: Share) -> int:
    share.refresh_from_db()
    return share.total_downloads


def test_the_landing_page_shows_the_file_and_a_live_countdown(page, report):
    share = share_of(report, max_downloads=3)
    response = page.goto(f"/s/{share.token}")
    assert response.status == 200
    expect(page.get_by_role("heading", name="Quarterly report.pdf")).to_be_visible()
    facts = page.locator(".facts")
    expect(facts).to_contain_text("2.0\u00a0KB")
    expect(facts).to_contain_text("application/pdf")
    expect(facts).to_contain_text(re.compile(r"Downloads left\s*3"))
    countdown = page.locator(".countdown")
    expect(countdown).to_have_text(re.compile(r"^(1 hr 0 min 0 sec|59 min \d+ sec)$"))
    first = countdown.inner_text()
    expect(countdown).not_to_have_text(first, timeout=3000)  # it ticks without a reload
    expect(page.get_by_role("link", name="Download")).to_be_visible()
    assert count(share) == 0  # viewing the page counts nothing
    axe_check(page)
    no_foreign_requests(page)
    save_screenshot(page, "link-landing")


def test_the_expiry_is_shown_in_the_visitors_time_zone(anon_context, report):
    share = share_of(report)
    page = anon_context(timezone_id="Asia/Tokyo", locale="en-US").new_page()
    page.goto(f"/s/{share.token}")
    local = share.expires_at.astimezone(ZoneInfo("Asia/Tokyo"))
    hour = local.hour % 12 or 12
    expected = f"{local:%b} {local.day}, {local.year}, {hour}:{local:%M:%S} {'PM' if local.hour >= 12 else 'AM'} GMT+9"
    expect(page.locator("time.local-time")).to_have_text(expected)  # the zone named


def test_clicking_download_saves_the_right_bytes_and_counts_once(page, report, tmp_path):
    share = share_of(report)
    page.goto(f"/s/{share.token}")
    with page.expect_download() as download:
        page.get_by_role("link", name="Download").click()
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(saved)
    assert saved.name == "Quarterly report.pdf"
    assert saved.read_bytes() == DATA
    assert count(share) == 1


def test_a_wrong_then_right_password(page, report):
    share = share_of(report, password="open sesame")
    page.goto(f"/s/{share.token}")
    expect(page.get_by_role("heading", name="This link is protected by a password")).to_be_visible()
    expect(page.get_by_text("Quarterly report.pdf")).to_have_count(0)  # nothing shown before the password
    axe_check(page)
    save_screenshot(page, "link-password")

    page.get_by_label("Password").fill("open sesamy")
    with page.expect_response(lambda r: r.request.method == "POST") as answer:
        page.get_by_role("button", name="Unlock").click()
    assert answer.value.status == 403
    expect(page.get_by_role("alert")).to_have_text("Wrong password. Try again. 9 tries left before a pause.")
    axe_check(page)

    page.get_by_label("Password").fill("open sesame")
    page.get_by_role("button", name="Unlock").click()
    expect(page.get_by_role("heading", name="Quarterly report.pdf")).to_be_visible()
    with page.expect_download() as download:
        page.get_by_role("link", name="Download").click()
    assert download.value.failure() is None
    assert count(share) == 1


@pytest.mark.parametrize(
    ("ending", "status", "says"),
    [
        # The moment in the reader's zone, named (the browser runs in UTC here).
        ("time", 410, r"This link has expired\.\s*It stopped working on .+ (UTC|GMT)[^.]*\.\s*If you still need"),
        (
            "limit",
            410,
            r"This link has been downloaded as many times as its sender allowed\.\s*Its downloads ran out on "
            r"[\s\S]+If you still",
        ),
        ("unshare", 410, r"This link has been unshared\.\s*Its owner stopped sharing it on .+\.\s*If you still"),
        ("unknown", 404, r"No such link\.\s*Check that the address was copied in full\."),
    ],
)
def test_each_ended_link_gets_a_page_that_says_what_happened(page, report, ending, status, says):
    # Only the link ended by time lives 0.2 s: the others must not lapse first on a busy machine.
    share = share_of(report, seconds=0.2 if ending == "time" else 3600, max_downloads=1)
    token = share.token
    if ending == "limit":
        share.count_download()
    elif ending == "unshare":
        share.unshare()
    elif ending == "unknown":
        token = "no-such-token-" + "x" * 20
    else:
        page.wait_for_timeout(300)
    response = page.goto(f"/s/{token}")
    assert response.status == status
    expect(page.locator("main")).to_have_text(re.compile(says))
    axe_check(page)
    if ending == "time":
        save_screenshot(page, "link-ended")


def test_the_countdown_turns_to_expired_without_a_reload(page, report):
    share = share_of(report, seconds=2.5)
    page.goto(f"/s/{share.token}")
    expect(page.get_by_role("link", name="Download")).to_be_visible()
    expect(page.locator(".countdown")).to_have_text("expired", timeout=6000)
    expect(page.get_by_role("status")).to_have_text("This link has expired.")
    expect(page.get_by_role("link", name="Download")).to_be_hidden()


def test_the_page_works_without_javascript(page_nojs, report, tmp_path):
    share = share_of(report)
    page_nojs.goto(f"/s/{share.token}")
    expect(page_nojs.get_by_role("heading", name="Quarterly report.pdf")).to_be_visible()
    expect(page_nojs.locator(".facts")).to_contain_text("2.0\u00a0KB")
    expect(page_nojs.locator("time.local-time")).to_have_text(re.compile(r"UTC$"))  # the server's rendering
    with page_nojs.expect_download() as download:
        page_nojs.get_by_role("link", name="Download").click()
    download.value.save_as(tmp_path / "saved.pdf")
    assert (tmp_path / "saved.pdf").read_bytes() == DATA
    axe_check(page_nojs)


def test_the_page_reads_well_on_a_phone(anon_context, report):
    share = share_of(report, max_downloads=5)
    page = anon_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True).new_page()
    page.goto(f"/s/{share.token}")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # no sideways scrolling
    expect(page.get_by_role("link", name="Download")).to_be_in_viewport()
    axe_check(page)
    save_screenshot(page, "link-landing-phone")


def test_the_password_form_posts_with_its_origin(page, report):
    """The site's Referrer-Policy (same-origin) keeps the link out of other
    sites' logs; a stricter no-referrer made Chromium send Origin: null, and
    the CSRF check refused every password."""
    share = share_of(report, password="pw")
    response = page.goto(f"/s/{share.token}")
    assert response.headers["referrer-policy"] == "same-origin"
    assert page.locator('meta[name="referrer"]').count() == 0


def test_pages_forbid_inline_scripts(page, report):
    share = share_of(report)
    response = page.goto(f"/s/{share.token}")
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy
    assert "unsafe-inline" not in policy
    assert page.locator("script:not([src])").count() == 0
