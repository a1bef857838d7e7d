"""The dashboard's choice of links (a view, a search, pages of ten), the
theme every page wears, and the live answer's new rows, without a browser
(tests/browser/test_dashboard_browser.py and test_themes_browser.py walk
through them in Chromium)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from sharing.models import Share
from web.views.dashboard import PAGE_SIZE


def share_of(stored, seconds: float = 3600, **options) -> Share:
    return Share.create_for(file=stored, expires_at=timezone.now() + timedelta(seconds=seconds), **options)


def listed(client, query: str, *shares: Share) -> set[int]:
    page = client.get(f"/?{query}").content.decode()
    return {share.pk for share in shares if f'data-share-id="{share.pk}"' in page}


@pytest.fixture
def three(shared_file):
    """A live link, an unshared one, and one past its deadline no daemon has marked yet."""
    live = share_of(shared_file)
    gone = share_of(shared_file)
    gone.unshare()
    overdue = Share.objects.create(
        owner=shared_file.owner,
        created_at=timezone.now() - timedelta(hours=2),
        expires_at=timezone.now() - timedelta(hours=1),
    )
    return live, gone, overdue


def test_it_lists_active_links_by_default(alice_web, three):
    live = three[0]
    assert listed(alice_web, "", *three) == {live.pk}
    assert listed(alice_web, "status=active", *three) == {live.pk}


def test_the_ended_view_holds_every_way_of_ending_and_all_holds_all(alice_web, three):
    live, gone, overdue = three
    assert listed(alice_web, "status=ended", *three) == {gone.pk, overdue.pk}
    assert listed(alice_web, "status=all", *three) == {live.pk, gone.pk, overdue.pk}
    # Addresses from before the Ended view still narrow to one way of ending.
    assert listed(alice_web, "status=expired", *three) == {overdue.pk}
    assert listed(alice_web, "status=unshared", *three) == {gone.pk}


def test_a_view_that_does_not_exist_is_a_400_naming_the_views(alice_web, three):
    live = three[0]
    response = alice_web.get("/?status=nonsense")
    assert response.status_code == 400
    assert "is not a view of links: choose Active, Ended or All." in response.content.decode()
    assert listed(alice_web, "status=nonsense", *three) == {live.pk}  # the Active view under the error


def test_it_searches_file_names_and_link_tokens(alice_web, alice, make_file):
    report = share_of(make_file(alice, name="Quarterly Report.pdf"))
    photo = share_of(make_file(alice, name="team photo.jpg"))
    assert listed(alice_web, "q=quarterly", report, photo) == {report.pk}
    assert listed(alice_web, f"q={photo.token[3:12]}", report, photo) == {photo.pk}
    assert listed(alice_web, f"q=https://files.example/s/{report.token}", report, photo) == {report.pk}
    assert listed(alice_web, "q=nothing-like-it", report, photo) == set()
    assert "No link matches this search." in alice_web.get("/?q=nothing-like-it").content.decode()
    assert "1 link matches “photo”." in alice_web.get("/?q=photo").content.decode()


def test_a_search_finds_a_link_of_several_files_once(alice_web, alice, make_file):
    files = [make_file(alice, name=f"part {n}.txt") for n in range(3)]
    several = Share.create_for(files=files, expires_at=timezone.now() + timedelta(hours=1))
    page = alice_web.get("/?q=part").content.decode()
    assert page.count(f'data-share-id="{several.pk}"') == 1


def test_a_search_finds_nothing_of_another_owner(alice_web, bob, make_file):
    theirs = share_of(make_file(bob, name="secret plans.txt"))
    assert listed(alice_web, "q=secret", theirs) == set()
    assert listed(alice_web, "q=secret&status=all", theirs) == set()


def test_a_search_too_long_is_a_400_saying_so(alice_web, shared_file):
    response = alice_web.get("/?q=" + "x" * 201)
    assert response.status_code == 400
    assert "at most 200 characters" in response.content.decode()


def test_the_links_come_in_pages_of_ten_keeping_the_search(alice_web, shared_file, make_shares):
    assert PAGE_SIZE == 10
    make_shares(25, 3600)
    first = alice_web.get("/?q=report").content.decode()
    assert first.count('class="share-row"') == 10
    assert "Page 1 of 3" in first
    assert "?q=report&amp;page=2" in first
    assert alice_web.get("/?page=3").content.decode().count('class="share-row"') == 5
    assert alice_web.get("/?page=oops").status_code == 200


def test_the_file_list_is_folded_unless_its_pages_are_asked_for(alice_web, shared_file):
    assert '<details class="file-list">' in alice_web.get("/").content.decode()
    assert '<details class="file-list" open>' in alice_web.get("/?files_page=1").content.decode()


def test_without_files_the_list_is_open_to_say_so(alice_web):
    page = alice_web.get("/").content.decode()
    assert '<details class="file-list" open>' in page
    assert "No files yet. Upload one above." in page


def test_the_links_come_before_the_files(alice_web, shared_file):
    page = alice_web.get("/").content.decode()
    assert page.index('id="shares-heading"') < page.index('id="upload-heading"') < page.index('id="files-heading"')


# --- the live answer's new rows ------------------------------------------------


def test_the_live_answer_brings_the_active_links_made_since(alice_web, shared_file, bob, make_file):
    known = share_of(shared_file)
    newer = share_of(shared_file)
    ended = share_of(shared_file)
    ended.unshare()
    share_of(make_file(bob))
    newest = share_of(shared_file)
    response = alice_web.get(f"/shares/live/?ids={known.pk}&after={known.pk}")
    assert response.status_code == 200
    made = response.json()["new"]
    assert [item["id"] for item in made] == [newest.pk, newer.pk]
    assert f'data-share-id="{newest.pk}"' in made[0]["html"]
    assert 'name="next" value="/"' in made[0]["html"]  # its forms come back to the dashboard
    assert set(response.json()["shares"]) == {str(known.pk)}


def test_the_live_answer_takes_no_ids_with_after(alice_web, shared_file):
    share = share_of(shared_file)
    response = alice_web.get("/shares/live/?ids=&after=0")
    assert response.status_code == 200
    assert [item["id"] for item in response.json()["new"]] == [share.pk]
    assert "new" not in alice_web.get(f"/shares/live/?ids={share.pk}").json()


@pytest.mark.parametrize("query", ["ids=", "ids=1&after=x", "ids=1&after=-1", "ids=&after=" + "9" * 30])
def test_the_live_answer_refuses_a_bad_after(alice_web, query):
    response = alice_web.get(f"/shares/live/?{query}")
    assert response.status_code == 400
    assert "share id" in response.json()["detail"]


def test_the_page_takes_new_links_only_on_the_first_page_of_the_active_view(alice_web, shared_file, make_shares):
    make_shares(12, 3600)
    newest = Share.objects.order_by("-pk").first()
    assert f'data-newest-id="{newest.pk}"' in alice_web.get("/").content.decode()
    for query in ("status=all", "page=2", "q=report"):
        assert "data-newest-id" not in alice_web.get(f"/?{query}").content.decode()
