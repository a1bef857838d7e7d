"""A code taken by racing requests is accepted once: the conditional UPDATE
(TOTP) and the DELETE (recovery codes) decide, by their row counts."""

from datetime import timedelta

import pyotp
import pytest
from django.utils import timezone

from signin import recovery, totp
from tests.helpers import in_threads

pytestmark = pytest.mark.django_db(transaction=True)


def test_one_totp_code_sent_by_eight_requests_at_once_is_accepted_once(alice):
    secret = totp.new_secret()
    app = pyotp.TOTP(secret)
    now = timezone.now()
    totp.set_up(alice, secret, app.at(now - timedelta(seconds=30)), now=now)
    code = app.at(now)
    results = in_threads(lambda: totp.accept_code(alice, code, now=now), workers=8)
    assert sorted(results) == [False] * 7 + [True]


def test_one_recovery_code_sent_by_eight_requests_at_once_works_once(alice):
    secret = totp.new_secret()
    codes = totp.set_up(alice, secret, pyotp.TOTP(secret).now())
    results = in_threads(lambda: recovery.use_code(alice, codes[0]), workers=8)
    assert sorted(results) == [False] * 7 + [True]
    assert recovery.codes_left(alice) == 9
