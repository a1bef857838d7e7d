"""An admin removes the second factor of a user who lost the phone and the codes."""

import pyotp
import pytest
from django.test import Client

from signin import totp
from signin.models import RecoveryCode, TotpDevice

pytestmark = pytest.mark.django_db


@pytest.fixture
def root_web(admin_user) -> Client:
    client = Client()
    client.force_login(admin_user)
    return client


def test_the_admin_lists_devices_without_their_secrets(root_web, alice):
    secret = totp.new_secret()
    totp.set_up(alice, secret, pyotp.TOTP(secret).now())
    device = TotpDevice.objects.get(user=alice)
    listing = root_web.get("/admin/signin/totpdevice/")
    assert listing.status_code == 200
    assert b"alice" in listing.content
    page = root_web.get(f"/admin/signin/totpdevice/{device.pk}/change/")
    assert page.status_code == 200
    assert secret.encode() not in page.content


def test_deleting_a_device_deletes_the_recovery_codes_too(root_web, alice):
    secret = totp.new_secret()
    totp.set_up(alice, secret, pyotp.TOTP(secret).now())
    device = TotpDevice.objects.get(user=alice)
    response = root_web.post(f"/admin/signin/totpdevice/{device.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not TotpDevice.objects.filter(user=alice).exists()
    assert not RecoveryCode.objects.filter(user=alice).exists()


def test_deleting_several_from_the_list_deletes_their_codes(root_web, alice, bob):
    for user in (alice, bob):
        secret = totp.new_secret()
        totp.set_up(user, secret, pyotp.TOTP(secret).now())
    ids = [str(pk) for pk in TotpDevice.objects.values_list("pk", flat=True)]
    response = root_web.post(
        "/admin/signin/totpdevice/", {"action": "delete_selected", "_selected_action": ids, "post": "yes"}
    )
    assert response.status_code == 302
    assert not RecoveryCode.objects.exists()
