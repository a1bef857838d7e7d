"""TOTP codes (RFC 6238, pyotp): setting up an authenticator app and
checking its codes, each accepted once.

A code is accepted for its 30-second step and one step either side (a
phone's clock a little off, a code typed as it changes). The device row's
last_step is raised by a conditional UPDATE with the step of the code: a
row count of 0 means this code (or a later one) was already used, so a code
seen over a shoulder or replayed by two racing requests signs in once."""

import pyotp
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from signin import recovery
from signin.models import TotpDevice

STEP = 30  # seconds: what every authenticator app uses
DRIFT = 1  # steps accepted either side of now


def new_secret() -> str:
    return pyotp.random_base32()


def setup_uri(secret: str, username: str) -> str:
    """The otpauth:// URI an authenticator app reads from the QR code."""
    return pyotp.TOTP(secret, interval=STEP).provisioning_uri(name=username, issuer_name=settings.TOTP_ISSUER)


def clean_code(code: str) -> str:
    return "".join(str(code).split())


def matching_step(secret: str, code: str, *, now=None) -> int | None:
    """The time step whose code `code` is, within DRIFT of now; None if none."""
    code = clean_code(code)
    if len(code) != 6 or not code.isdigit():
        return None
    totp = pyotp.TOTP(secret, interval=STEP)
    moment = (now or timezone.now()).timestamp()
    step = int(moment // STEP)
    for candidate in range(step - DRIFT, step + DRIFT + 1):
        if pyotp.utils.strings_equal(totp.generate_otp(candidate), code):
            return candidate
    return None


def has_device(user) -> bool:
    return TotpDevice.objects.filter(user_id=user.pk).exists()


def accept_code(user, code: str, *, now=None) -> bool:
    """Is `code` the user's current code, not used before? Takes it if so."""
    device = TotpDevice.objects.filter(user_id=user.pk).first()
    if device is None:
        return False
    step = matching_step(device.secret, code, now=now)
    if step is None:
        return False
    return TotpDevice.objects.filter(pk=device.pk, last_step__lt=step).update(last_step=step) == 1


def set_up(user, secret: str, code: str, *, now=None) -> list[str] | None:
    """Make `secret` the user's device if `code` is its current code;
    return the new recovery codes (shown once), or None for a wrong code.
    Any earlier device and recovery codes are replaced."""
    step = matching_step(secret, code, now=now)
    if step is None:
        return None
    with transaction.atomic():
        TotpDevice.objects.filter(user_id=user.pk).delete()
        TotpDevice.objects.create(user_id=user.pk, secret=secret, last_step=step)
        return recovery.replace_codes(user)


def turn_off(user) -> None:
    """Remove the user's device and recovery codes."""
    with transaction.atomic():
        TotpDevice.objects.filter(user_id=user.pk).delete()
        recovery.delete_codes(user)
