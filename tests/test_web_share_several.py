"""Sharing several files from the web app: the owner ticks files on the
dashboard and gets one link for all of them (works without JavaScript: a
plain GET form, then the usual share form)."""

import pytest

from sharing.models import Share

pytestmark = pytest.mark.django_db

FORM = {"lifetime": "86400", "time_zone": "UTC"}


@pytest.fixture
def files(alice, make_file):
    return [make_file(alice, name, f"{name}\n".encode()) for name in ("a.txt", "b.txt", "c.txt")]


def test_the_dashboard_offers_a_box_per_file_and_one_button(alice_web, files):
    page = alice_web.get("/").content.decode()

    assert '<form id="share-several" method="get" action="/files/share/">' in page
    for stored in files:
        assert f'name="files" value="{stored.pk}" form="share-several"' in page
    assert "Share the chosen files with one link" in page


def test_the_chosen_files_get_one_link_in_the_order_chosen(alice_web, files):
    chosen = f"/files/share/?files={files[2].pk}&files={files[0].pk}"

    form = alice_web.get(chosen)
    made = alice_web.post(chosen, FORM)

    assert form.status_code == 200
    page = form.content.decode()
    assert "Share 2 files" in page
    assert page.index("c.txt") < page.index("a.txt")
    share = Share.objects.get()
    assert made.status_code == 302
    assert made["Location"] == f"/shares/{share.pk}/"
    assert share.file_ids == [files[2].pk, files[0].pk]
    detail = alice_web.get(made["Location"]).content.decode()
    assert "c.txt and 1 more file" in detail
    assert detail.index('<span class="file-name">c.txt</span>') < detail.index('<span class="file-name">a.txt</span>')


def test_no_file_chosen_goes_back_with_a_message(alice_web, files):
    response = alice_web.get("/files/share/", follow=True)

    assert response.redirect_chain == [("/#files", 302)]
    assert "Choose at least one file to share." in response.content.decode()
    assert not Share.objects.exists()


@pytest.mark.parametrize("value", ["abc", "-1", "99999999999999999999999", "999999"])
def test_a_file_that_is_not_a_file_of_yours_is_a_404(alice_web, files, value):
    assert alice_web.get(f"/files/share/?files={files[0].pk}&files={value}").status_code == 404


def test_someone_elses_file_is_a_404_and_nothing_is_shared(bob_web, files):
    chosen = f"/files/share/?files={files[0].pk}"

    assert bob_web.get(chosen).status_code == 404
    assert bob_web.post(chosen, FORM).status_code == 404
    assert not Share.objects.exists()


def test_a_file_chosen_twice_is_shared_once(alice_web, files):
    alice_web.post(f"/files/share/?files={files[1].pk}&files={files[1].pk}", FORM)

    assert Share.objects.get().file_ids == [files[1].pk]
