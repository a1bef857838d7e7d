"""The owner pages in a real browser: sign in, upload, share, watch the link
live, unshare and extend, with axe-core on every page and a phone's width.
The rules behind each action are tested without a browser in
tests/test_web_pages.py."""

import re
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from sharing.models import Share, StoredFile
from tests.browser.helpers import axe_check, no_foreign_requests, save_screenshot

PASSWORD = "alice-password-1"  # tests/conftest.py's alice
ZONE = "Europe/Paris"


@pytest.fixture
def owner(anon_context, alice):
    """Alice's browser, signed in through the log-in page, in Paris time."""
    page = anon_context(timezone_id=ZONE, permissions=["clipboard-read", "clipboard-write"]).new_page()
    sign_in(page, "alice", PASSWORD)
    return page


def sign_in(page: Page, username: str, password: str) -> None:
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/login/\?next=/$"))
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Your files and links")).to_be_visible()
    page.wait_for_load_state()  # the page's scripts are listening


def share_of(stored, seconds: float = 3600, **options) -> Share:
    return Share.create_for(file=stored, expires_at=timezone.now() + timedelta(seconds=seconds), **options)


def record_posts(page: Page) -> list[str]:
    """The URLs the page POSTs to from now on."""
    posts: list[str] = []
    page.on("request", lambda request: posts.append(request.url) if request.method == "POST" else None)
    return posts


def row_of(page: Page, share: Share):
    return page.locator(f'[data-share-id="{share.pk}"]')


def show_files(page: Page) -> None:
    """Unfold the dashboard's file list (folded so that the links come first)."""
    page.locator("details.file-list > summary").click()


def test_the_log_in_page_leads_to_the_dashboard(page, alice):
    page.goto("/")
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    axe_check(page)
    no_foreign_requests(page)
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill("not it")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("alert")).to_contain_text("Please enter a correct username and password")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Your files and links")).to_be_visible()
    expect(page.get_by_text("No files yet. Upload one above.")).to_be_visible()


def test_uploading_through_the_file_input_lists_the_files(owner, alice):
    posts = record_posts(owner)
    owner.locator("#id_files").set_input_files(
        [
            {"name": "holiday.jpg", "mimeType": "image/jpeg", "buffer": b"\xff\xd8" + b"x" * 300_000},
            {"name": "notes.txt", "mimeType": "text/plain", "buffer": b"remember the milk\n"},
        ]
    )
    progress = owner.locator("#upload-progress li")
    expect(progress).to_have_count(2)
    expect(progress.nth(0)).to_contain_text("Uploaded")
    expect(progress.nth(1)).to_contain_text("Uploaded")
    expect(progress.locator("progress").nth(0)).to_have_attribute("value", "100")
    files = owner.locator("#files tbody tr")
    expect(files).to_have_count(2)  # listed without a reload
    expect(owner.locator("#files")).to_contain_text("holiday.jpg")
    expect(owner.locator("#files")).to_contain_text("293.0\u00a0KB")
    assert sorted(StoredFile.objects.filter(owner=alice).values_list("name", flat=True)) == ["holiday.jpg", "notes.txt"]
    assert len(posts) == 2  # one upload created a file (its chunks go as PATCH), each with its own progress bar
    assert all(url.endswith("/api/uploads/") for url in posts)  # resumable (tus), not one multipart request


def test_a_file_over_the_limit_is_refused_before_it_is_sent(anon_context, alice, settings):
    settings.MAX_UPLOAD_BYTES = 1000
    page = anon_context().new_page()
    sign_in(page, "alice", PASSWORD)
    posts = record_posts(page)
    page.locator("#id_files").set_input_files(
        [
            {"name": "big.bin", "mimeType": "application/octet-stream", "buffer": b"x" * 1001},
            {"name": "small.txt", "mimeType": "text/plain", "buffer": b"x" * 1000},
        ]
    )
    progress = page.locator("#upload-progress li")
    expect(progress.nth(0)).to_contain_text("Larger than the 1000\u00a0bytes limit; not sent.")
    expect(progress.nth(1)).to_contain_text("Uploaded")
    assert list(StoredFile.objects.values_list("name", flat=True)) == ["small.txt"]
    assert len(posts) == 1  # small.txt: big.bin never left the browser


def test_share_with_a_short_lifetime_and_a_limit_then_watch_it_expire_live(
    owner, anon_context, make_file, alice, tmp_path
):
    stored = make_file(alice, name="Plans.pdf", data=b"%PDF-1.4 plans", content_type="application/pdf")
    owner.goto("/")
    show_files(owner)
    owner.get_by_role("link", name="Share Plans.pdf").click()
    expect(owner.get_by_role("heading", name="Share Plans.pdf")).to_be_visible()
    expect(owner.locator("[data-local-zone]")).to_have_text(ZONE)
    expect(owner.get_by_label("7 days")).to_be_checked()  # the policy's default lifetime
    axe_check(owner)
    no_foreign_requests(owner)
    save_screenshot(owner, "web-share-dialog")

    owner.get_by_label("Download limit").fill("2")
    # Typing a date and time picks "A date and time"; it is read in Paris time.
    # Long enough for the typing, the creation and the visitor's download on a
    # loaded machine (4 s was not, on a CI run beside other work).
    deadline = (timezone.now() + timedelta(seconds=15)).replace(microsecond=0)
    # Chromium writes a whole minute without ":00", and Playwright refuses a
    # fill whose value the input then shows differently ("Malformed value").
    shown = "%Y-%m-%dT%H:%M:%S" if deadline.second else "%Y-%m-%dT%H:%M"
    owner.get_by_label("End date and time").fill(deadline.astimezone(ZoneInfo(ZONE)).strftime(shown))
    expect(owner.get_by_label("A date and time")).to_be_checked()
    owner.get_by_role("button", name="Create link").click()

    expect(owner.get_by_text("Your link is ready.")).to_be_visible()
    share = Share.objects.holding(stored.pk).get()
    assert share.expires_at == deadline
    assert share.max_downloads == 2
    link = owner.get_by_label("Link", exact=True).input_value()
    assert link.endswith(f"/s/{share.token}")
    owner.evaluate("window.notReloaded = true")

    # A recipient, in a browser that never signed in, downloads it in time.
    visitor = anon_context().new_page()
    visitor.goto(link)
    with visitor.expect_download() as download:
        visitor.get_by_role("link", name="Download").click()
    saved = tmp_path / "plans.pdf"
    download.value.save_as(saved)
    assert saved.read_bytes() == b"%PDF-1.4 plans"

    # The owner's page turns to expired at the deadline, without a reload,
    # then shows the server's account: the download counted, when it ended.
    expect(owner.locator('[data-field="time_left"]')).to_have_text("Expired", timeout=25000)
    expect(owner.locator('[data-field="status_label"]')).to_have_text("Expired")
    expect(owner.locator('[data-field="downloads"]')).to_have_text("1 (limit 2)", timeout=8000)
    expect(owner.locator('[data-field="ended"]')).to_contain_text("Expired at")
    expect(owner.get_by_role("button", name="Unshare")).to_be_hidden()
    assert owner.evaluate("window.notReloaded") is True
    assert visitor.goto(link).status == 410


def test_the_copy_button_puts_the_link_on_the_clipboard(owner, shared_file):
    share = share_of(shared_file)
    owner.goto(f"/shares/{share.pk}/")
    expect(owner.get_by_role("img", name="QR code of the link")).to_be_visible()
    owner.get_by_role("button", name="Copy").click()
    expect(owner.locator("#announcer")).to_have_text("Link copied.")
    save_screenshot(owner, "web-share-link")
    assert owner.evaluate("navigator.clipboard.readText()") == owner.get_by_label("Link", exact=True).input_value()
    axe_check(owner)


def test_unsharing_from_the_dashboard_makes_the_link_answer_410(owner, anon_context, shared_file):
    keep = share_of(shared_file)
    end = share_of(shared_file)
    owner.goto("/?status=all")
    row_of(owner, end).get_by_role("button", name=re.compile("^Unshare")).click()
    expect(owner.get_by_text("The link has been unshared; it no longer works.")).to_be_visible()
    expect(row_of(owner, end).locator('[data-field="status_label"]')).to_have_text("Unshared")
    expect(row_of(owner, keep).locator('[data-field="status_label"]')).to_have_text("Active")
    visitor = anon_context().new_page()
    answer = visitor.goto(f"/s/{end.token}")
    assert answer.status == 410
    expect(visitor.get_by_role("heading", name="This link has been unshared.")).to_be_visible()
    axe_check(visitor)  # the ended-link page
    assert visitor.goto(f"/s/{keep.token}").status == 200
    axe_check(visitor)  # the landing page


def test_extending_a_share_shows_its_new_time(owner, shared_file):
    share = share_of(shared_file, seconds=600)
    owner.goto(f"/shares/{share.pk}/")
    owner.get_by_label("30 days").check()
    owner.get_by_role("button", name="Save the new expiry").click()
    expect(owner.get_by_text("The link now expires at the new time.")).to_be_visible()
    share.refresh_from_db()
    assert share.expires_at > timezone.now() + timedelta(days=29)
    expires = owner.locator("dt:text-is('Expires') + dd time")
    expect(expires).to_have_attribute("datetime", share.expires_at.isoformat())
    paris = share.expires_at.astimezone(ZoneInfo(ZONE))
    expect(expires).to_contain_text(f"{paris:%b} {paris.day}, {paris.year}")
    expect(owner.locator('[data-field="time_left"]')).to_have_text(re.compile(r"^(30|29) days "))
    axe_check(owner)  # the page with its message list


# A moment as the pages' script writes it in the reader's zone, named.
LOCAL_MOMENT = re.compile(r"^[A-Z][a-z]{2} \d{1,2}, \d{4}, \d{1,2}:\d\d:\d\d [AP]M (UTC|GMT[+-]\d{1,2}(:\d\d)?)$")


def words_broken_across_lines(page, selector: str) -> list[str]:
    """The words inside `selector` that the layout split over two lines."""
    return page.evaluate(
        """(selector) => {
          const broken = [];
          for (const cell of document.querySelectorAll(selector)) {
            const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
            for (let node = walker.nextNode(); node; node = walker.nextNode()) {
              for (const word of node.data.matchAll(/\\S+/g)) {
                const range = document.createRange();
                range.setStart(node, word.index);
                range.setEnd(node, word.index + word[0].length);
                const tops = new Set([...range.getClientRects()].map((rect) => Math.round(rect.top)));
                if (tops.size > 1) broken.push(word[0]);
              }
            }
          }
          return broken;
        }""",
        selector,
    )


def test_the_dashboard_shows_each_links_life_and_reads_well(owner, alice, make_file):
    report = make_file(alice, name="Quarterly report.pdf", data=b"%PDF" * 500, content_type="application/pdf")
    photo = make_file(alice, name="Team photo.jpg", data=b"\xff\xd8" * 40_000, content_type="image/jpeg")
    limited = share_of(report, seconds=3 * 86400, max_downloads=5)
    for _ in range(2):
        assert limited.count_download()
    share_of(photo, seconds=2 * 3600, password="secret words")
    share_of(photo, seconds=600).unshare()
    used = share_of(report, max_downloads=1)
    assert used.count_download()
    owner.goto("/?status=all")
    expect(row_of(owner, limited).locator('[data-field="downloads"]')).to_have_text("2 (limit 5)")
    expect(row_of(owner, limited).locator('[data-field="downloads_left"]')).to_have_text("3")
    expect(row_of(owner, used).locator('[data-field="ended"]')).to_contain_text("Download limit reached at")
    # One way to write a moment on the page: when a link ended reads like when one expires.
    expect(row_of(owner, used).locator('[data-field="ended"] time')).to_have_text(LOCAL_MOMENT)
    expect(row_of(owner, limited).locator("td[data-label=Expires] time")).to_have_text(LOCAL_MOMENT)
    assert words_broken_across_lines(owner, ".file-name") == []
    expect(row_of(owner, limited).locator('[data-field="time_left"]')).to_have_text(
        re.compile(r"^(3 days 0 hr 0 min|2 days 23 hr 59 min)$")
    )
    axe_check(owner)
    no_foreign_requests(owner)
    save_screenshot(owner, "web-dashboard")
    owner.get_by_role("link", name="Ended").click()
    expect(owner.locator("tbody tr.share-row")).to_have_count(2)  # the unshared link and the used one
    expect(owner.get_by_role("link", name="Ended")).to_have_attribute("aria-current", "page")


def test_the_dashboard_works_on_a_phone(anon_context, alice, shared_file):
    share_of(shared_file, max_downloads=3)
    page = anon_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True).new_page()
    sign_in(page, "alice", PASSWORD)
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0
    assert words_broken_across_lines(page, ".file-name") == []
    expect(page.get_by_role("button", name=re.compile("^Unshare"))).to_be_visible()
    axe_check(page)
    save_screenshot(page, "web-dashboard-phone")


def test_the_pages_work_without_javascript(anon_context, alice):
    page = anon_context(java_script_enabled=False).new_page()
    page.goto("/login/")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.locator("#id_files").set_input_files([{"name": "a.txt", "mimeType": "text/plain", "buffer": b"plain"}])
    page.get_by_role("button", name="Upload").click()
    expect(page.get_by_text("Uploaded a.txt.")).to_be_visible()
    expect(page.get_by_role("link", name="Share a.txt")).to_be_visible()  # the list unfolded after an upload
    page.get_by_role("link", name="Share a.txt").click()
    page.get_by_label("1 day").check()
    page.get_by_role("button", name="Create link").click()
    expect(page.get_by_text("Your link is ready.")).to_be_visible()
    expect(page.get_by_role("button", name="Copy")).to_be_hidden()  # needs a script; the link can be selected
    share = Share.objects.get()
    assert abs(share.expires_at - share.created_at - timedelta(days=1)) < timedelta(seconds=5)
    page.get_by_role("button", name="Unshare").click()
    expect(page.get_by_text("The link has been unshared; it no longer works.")).to_be_visible()
    share.refresh_from_db()
    assert share.status == Share.Status.UNSHARED


def test_deleting_a_file_asks_first_and_says_what_it_ends(owner, shared_file):
    share_of(shared_file)
    owner.goto("/")
    show_files(owner)
    owner.get_by_role("link", name="Delete report.txt").click()
    expect(owner.get_by_text("This ends 1 live link.")).to_be_visible()
    axe_check(owner)
    owner.get_by_role("button", name="Delete the file").click()
    expect(owner.get_by_text("Deleted report.txt; 1 live link ended.")).to_be_visible()
    assert not StoredFile.objects.exists()


def test_a_local_time_shown_is_the_owners(owner, shared_file):
    share = share_of(shared_file)
    owner.goto(f"/shares/{share.pk}/")
    paris = share.expires_at.astimezone(ZoneInfo(ZONE))
    hour = paris.hour % 12 or 12
    zone = f"GMT+{paris.utcoffset() // timedelta(hours=1)}"  # Paris: GMT+1 in winter, GMT+2 in summer
    expected = f"{paris:%b} {paris.day}, {paris.year}, {hour}:{paris:%M:%S} {'PM' if paris.hour >= 12 else 'AM'} {zone}"
    expect(owner.locator("dt:text-is('Expires') + dd time")).to_have_text(expected)  # the zone named
    assert isinstance(
        datetime.fromisoformat(owner.locator("dt:text-is('Expires') + dd time").get_attribute("datetime")), datetime
    )


def test_the_api_token_page_makes_a_token_once_and_passes_axe(owner):
    owner.goto("/account/token/")
    axe_check(owner)
    owner.get_by_label("Name").fill("laptop")
    owner.get_by_label("Expiry").select_option(label="In 30 days")
    owner.get_by_role("button", name="Make a token").click()
    expect(owner.locator("#new-token")).to_have_text(re.compile(r"^[A-Za-z0-9_-]{43}$"))
    axe_check(owner)
    owner.goto("/account/token/")
    expect(owner.locator("#new-token")).to_have_count(0)  # shown once
    expect(owner.locator("#tokens")).to_contain_text("expires on")
    owner.get_by_role("button", name="Revoke laptop").click()
    expect(owner.locator("#tokens")).to_have_count(0)


@pytest.mark.parametrize("width", [390, 768, 1024, 1280])
def test_file_names_wrap_between_words_at_every_width(anon_context, alice, make_file, width):
    for name in ("Quarterly financial statements.pdf", "Minutes of the board meeting.docx", "Team photo.jpg"):
        share_of(make_file(alice, name=name), seconds=5 * 3600, max_downloads=3, password="pw")
    page = anon_context(viewport={"width": width, "height": 900}).new_page()
    sign_in(page, "alice", PASSWORD)
    expect(page.locator("tbody tr.share-row")).to_have_count(3)
    assert words_broken_across_lines(page, ".file-name") == []
    assert page.evaluate("document.documentElement.scrollWidth") <= width  # nothing wider than the screen
