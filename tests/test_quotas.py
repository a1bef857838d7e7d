"""Storage quotas: the policy's default or a user's own, checked when a file
is stored and exact under concurrent uploads; deleting a file frees its
space; the admin sets them as people write sizes; the dashboard shows them."""

import threading

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client

from sharing.models import QuotaExceeded, SharingPolicy, StorageAccount, StoredFile, delete_file
from sharing.models.quotas import charge, release, reserve

pytestmark = pytest.mark.django_db


def set_default_quota(size: int | None) -> None:
    SharingPolicy.objects.update_or_create(pk=SharingPolicy.SINGLETON_ID, defaults={"default_quota_bytes": size})


def upload(owner, size: int, name: str = "f.bin", **options) -> StoredFile:
    return StoredFile.create_from_upload(owner=owner, upload=SimpleUploadedFile(name, b"x" * size), **options)


def account(user) -> StorageAccount:
    return StorageAccount.objects.get(pk=user.pk)


def stored_bytes(media_root) -> int:
    return sum(path.stat().st_size for path in media_root.rglob("*") if path.is_file())


def test_without_a_quota_every_file_is_counted_and_fits(alice):
    upload(alice, 700)
    upload(alice, 300)
    assert account(alice).used_bytes == 1000
    assert account(alice).quota() is None


def test_a_file_over_the_default_quota_is_refused_with_the_free_space_and_leaves_nothing(
    alice, alice_client, media_root
):
    set_default_quota(100)
    upload(alice, 60)
    response = alice_client.post("/api/files/", {"file": SimpleUploadedFile("big.bin", b"y" * 50)}, format="multipart")
    assert response.status_code == 413
    assert response.json()["detail"] == (
        "Not enough storage: this file needs 50\xa0bytes, and 40\xa0bytes of your 100\xa0bytes are free. "
        "Delete files you no longer need, or ask an admin for more space."
    )
    assert StoredFile.objects.count() == 1
    assert stored_bytes(media_root) == 60  # the refused bytes were never written (or were removed)
    assert account(alice).used_bytes == 60


def test_a_users_own_quota_wins_over_the_default(alice, bob):
    set_default_quota(100)
    StorageAccount.objects.create(user=bob, quota_bytes=1000)
    upload(bob, 900)
    with pytest.raises(QuotaExceeded):
        upload(alice, 101)


def test_deleting_a_file_frees_its_space(alice):
    set_default_quota(100)
    first = upload(alice, 80)
    with pytest.raises(QuotaExceeded):
        upload(alice, 30)
    delete_file(first)
    assert account(alice).used_bytes == 0
    upload(alice, 30)
    assert account(alice).used_bytes == 30


def test_reserved_bytes_count_until_released_or_turned_into_a_file(alice):
    set_default_quota(100)
    reserve(alice.pk, 80)
    with pytest.raises(QuotaExceeded):
        upload(alice, 30)
    with pytest.raises(QuotaExceeded):
        reserve(alice.pk, 30)
    release(alice.pk, 80)
    reserve(alice.pk, 50)
    upload(alice, 50, reserved=50)  # the upload its reservation was for
    assert (account(alice).used_bytes, account(alice).reserved_bytes) == (50, 0)
    with pytest.raises(QuotaExceeded):
        charge(alice.pk, 51)


# --- at the boundary: the last free byte fits ------------------------------------


def test_it_stores_a_file_that_fills_the_default_quota_exactly(alice):
    set_default_quota(100)
    upload(alice, 60)
    upload(alice, 40)  # exactly the 40 bytes left: the early check must not refuse it
    assert (account(alice).used_bytes, account(alice).free()) == (100, 0)
    with pytest.raises(QuotaExceeded) as refused:
        upload(alice, 1)
    assert refused.value.free == 0
    assert "0\xa0bytes of your 100\xa0bytes are free" in refused.value.message


def test_it_stores_a_file_that_fills_a_users_own_quota_exactly(alice):
    set_default_quota(1000)  # never reached: alice's own quota decides
    StorageAccount.objects.create(user=alice, quota_bytes=100)
    upload(alice, 60)
    upload(alice, 40)
    assert account(alice).used_bytes == 100
    with pytest.raises(QuotaExceeded):
        upload(alice, 1)


def test_it_sets_aside_and_stores_exactly_the_free_bytes_of_a_users_own_quota(alice):
    # Reserved bytes skip the early check (an upload's were set aside at its
    # creation): the statement in charge() and reserve() alone decides here.
    StorageAccount.objects.create(user=alice, quota_bytes=100)
    reserve(alice.pk, 30)
    reserve(alice.pk, 70)
    assert (account(alice).used_bytes, account(alice).reserved_bytes) == (0, 100)
    with pytest.raises(QuotaExceeded):
        reserve(alice.pk, 1)
    upload(alice, 70, reserved=70)
    upload(alice, 30, reserved=30)
    assert (account(alice).used_bytes, account(alice).reserved_bytes) == (100, 0)


def test_it_refuses_a_charge_from_bytes_never_set_aside_even_without_a_quota(alice):
    with pytest.raises(QuotaExceeded) as refused:
        charge(alice.pk, 50, from_reserved=50)
    assert (refused.value.quota, refused.value.free) == (0, 0)  # no quota to name: none applies
    assert (account(alice).used_bytes, account(alice).reserved_bytes) == (0, 0)


@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_uploads_fill_the_quota_exactly(alice, media_root):
    set_default_quota(100)
    outcomes, start = [], threading.Barrier(20)

    def one():
        try:
            start.wait()
            upload(alice, 10)
            outcomes.append("stored")
        except QuotaExceeded:
            outcomes.append("refused")
        except Exception as exc:  # reported in the assertion below, not swallowed
            outcomes.append(repr(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=one) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    # Fewer than 10 only if the early check refused some that would fit: never more.
    assert outcomes.count("stored") == 10, outcomes
    assert outcomes.count("refused") == 10, outcomes
    assert StoredFile.objects.count() == 10
    assert account(alice).used_bytes == 100
    assert stored_bytes(media_root) == 100  # no refused file left its bytes behind


def test_the_admin_sets_quotas_as_sizes(admin_user, alice):
    admin = Client()
    admin.force_login(admin_user)
    SharingPolicy.objects.get_or_create(pk=SharingPolicy.SINGLETON_ID)
    url = f"/admin/sharing/sharingpolicy/{SharingPolicy.SINGLETON_ID}/change/"
    form = {
        "default_lifetime": "7 00:00:00",
        "max_lifetime": "30 00:00:00",
        "ended_retention": "30 00:00:00",
        "reminder_lead": "1 00:00:00",
    }
    for wrong in ("ten gigs", "9" * 400):  # the second once overflowed float -> int: a 500
        refused = admin.post(url, {**form, "default_quota_bytes": wrong})
        assert refused.status_code == 200
        assert "Enter a size such as 500 MB" in refused.content.decode()
    assert admin.post(url, {**form, "default_quota_bytes": "10 GB"}).status_code == 302
    assert SharingPolicy.current().default_quota_bytes == 10 * 1000**3

    upload(alice, 5)
    listing = admin.get("/admin/sharing/storageaccount/?q=ali").content.decode()
    assert "alice" in listing
    assert "9.3\xa0GB (the default)" in listing
    changed = admin.post(f"/admin/sharing/storageaccount/{alice.pk}/change/", {"quota_bytes": "1.5 GiB"})
    assert changed.status_code == 302
    assert account(alice).quota_bytes == int(1.5 * 1024**3)
    admin.post(f"/admin/sharing/storageaccount/{alice.pk}/change/", {"quota_bytes": ""})
    assert account(alice).quota_bytes is None  # back to the default


def test_the_dashboard_shows_used_and_free_space(alice, alice_web):
    upload(alice, 250)
    assert "Your files take 250\xa0bytes." in alice_web.get("/").content.decode()
    set_default_quota(1000)
    page = alice_web.get("/").content.decode()
    assert "250\xa0bytes of 1000\xa0bytes used, 750\xa0bytes free." in page
    assert '<meter id="storage-meter" min="0" max="1000" value="250">' in page


def test_the_upload_page_names_the_file_that_did_not_fit(alice, alice_web):
    set_default_quota(100)
    files = [SimpleUploadedFile("small.txt", b"s" * 40), SimpleUploadedFile("large.txt", b"l" * 70)]
    response = alice_web.post("/files/", {"files": files})
    assert response.status_code == 413
    assert "large.txt was not uploaded. Not enough storage" in response.content.decode()
    assert list(StoredFile.objects.values_list("name", flat=True)) == ["small.txt"]  # the one that fitted stays
