"""Download limits and passwords through the REST API."""

import pytest

from sharing.models import Share

pytestmark = pytest.mark.django_db


def create(client, file_id, **fields):
    return client.post("/api/shares/", {"file": file_id, "expires_in": 3600, **fields}, format="json")


def test_a_share_with_a_limit_and_a_password(alice_client, shared_file):
    response = create(alice_client, shared_file.pk, max_downloads=3, password="open sesame")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["max_downloads"], body["downloads_left"], body["has_password"]) == (3, 3, True)
    assert "password" not in body
    share = Share.objects.get(pk=body["id"])
    assert share.check_password("open sesame")
    assert "open sesame" not in share.password_hash


@pytest.mark.parametrize(
    "value",
    [0, -1, 10**10, 2**63, 10**400, "many", 1.5, True, [3], {"n": 3}],
    ids=["zero", "negative", "huge", "int64", "bignum", "text", "float", "bool", "list", "object"],
)
def test_a_bad_limit_is_a_400_naming_the_field(alice_client, shared_file, value):
    response = create(alice_client, shared_file.pk, max_downloads=value)
    assert response.status_code == 400
    assert list(response.json()) == ["max_downloads"]
    assert not Share.objects.exists()


def test_null_means_unlimited(alice_client, shared_file):
    body = create(alice_client, shared_file.pk, max_downloads=None).json()
    assert (body["max_downloads"], body["downloads_left"]) == (None, None)


def test_lowering_the_limit_below_the_count_is_a_400(alice_client, shared_file):
    share_id = create(alice_client, shared_file.pk, max_downloads=5).json()["id"]
    share = Share.objects.get(pk=share_id)
    for _ in range(3):
        share.count_download()
    response = alice_client.patch(f"/api/shares/{share_id}/", {"max_downloads": 2}, format="json")
    assert response.status_code == 400
    assert "max_downloads" in response.json()
    assert "3 downloads" in response.json()["max_downloads"][0]

    raised = alice_client.patch(f"/api/shares/{share_id}/", {"max_downloads": 10}, format="json").json()
    assert (raised["max_downloads"], raised["downloads_left"]) == (10, 7)
    ended = alice_client.patch(f"/api/shares/{share_id}/", {"max_downloads": 3}, format="json").json()
    assert (ended["status"], ended["end_reason"], ended["downloads_left"]) == ("expired", "download_limit", 0)
    assert ended["lateness_ms"] is None


def test_a_password_can_be_set_changed_and_removed_by_patch(alice_client, shared_file):
    share_id = create(alice_client, shared_file.pk).json()["id"]
    set_ = alice_client.patch(f"/api/shares/{share_id}/", {"password": "pw one"}, format="json").json()
    assert set_["has_password"] is True
    assert Share.objects.get(pk=share_id).check_password("pw one")
    removed = alice_client.patch(f"/api/shares/{share_id}/", {"password": ""}, format="json").json()
    assert removed["has_password"] is False


@pytest.mark.parametrize("password", ["x" * 1025, 12345, None])
def test_a_bad_password_value_is_a_400(alice_client, shared_file, password):
    response = create(alice_client, shared_file.pk, password=password)
    assert response.status_code == 400
    assert list(response.json()) == ["password"]


def test_a_share_that_ended_by_its_limit_is_listed_as_expired(alice_client, shared_file):
    share_id = create(alice_client, shared_file.pk, max_downloads=1).json()["id"]
    Share.objects.get(pk=share_id).count_download()
    expired = alice_client.get("/api/shares/?status=expired").json()["results"]
    assert [s["id"] for s in expired] == [share_id]
    assert expired[0]["end_reason"] == "download_limit"
    assert alice_client.get("/api/shares/?status=active").json()["count"] == 0


def test_an_empty_password_on_a_new_link_is_refused(alice_client, shared_file):
    response = create(alice_client, shared_file.pk, password="")
    assert response.status_code == 400
    assert response.json() == {
        "password": ["An empty password protects nothing: leave password out for a link without one."]
    }
    assert not Share.objects.exists()
