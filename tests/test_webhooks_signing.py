"""The signer against the Standard Webhooks specification's test vector."""

import base64

import pytest

from webhooks.models import SECRET_PREFIX, new_secret
from webhooks.signing import SignatureError, headers, sign, verify

# From the specification's reference libraries' tests (standard-webhooks).
SPEC_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SPEC_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
SPEC_TIMESTAMP = 1614265330
SPEC_BODY = b'{"test": 2432232314}'
SPEC_SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_the_signature_is_the_specifications_test_vector():
    assert sign(SPEC_SECRET, SPEC_ID, SPEC_TIMESTAMP, SPEC_BODY) == SPEC_SIGNATURE
    # The key is the base64 after the prefix; a bare key signs the same.
    assert sign(SPEC_SECRET.removeprefix(SECRET_PREFIX), SPEC_ID, SPEC_TIMESTAMP, SPEC_BODY) == SPEC_SIGNATURE


def test_verify_accepts_the_vector_and_a_rotated_list_and_refuses_tampering():
    sent = headers(SPEC_SECRET, SPEC_ID, SPEC_TIMESTAMP, SPEC_BODY)
    assert sent == {
        "webhook-id": SPEC_ID,
        "webhook-timestamp": str(SPEC_TIMESTAMP),
        "webhook-signature": SPEC_SIGNATURE,
    }
    verify(SPEC_SECRET, sent, SPEC_BODY, now=SPEC_TIMESTAMP + 10)
    rotated = {**sent, "webhook-signature": f"v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= {SPEC_SIGNATURE}"}
    verify(SPEC_SECRET, rotated, SPEC_BODY, now=SPEC_TIMESTAMP)
    with pytest.raises(SignatureError):
        verify(SPEC_SECRET, sent, b'{"test": 2432232315}', now=SPEC_TIMESTAMP)
    with pytest.raises(SignatureError):
        verify(SPEC_SECRET, {**sent, "webhook-id": "msg_other"}, SPEC_BODY, now=SPEC_TIMESTAMP)
    with pytest.raises(SignatureError):
        verify(new_secret(), sent, SPEC_BODY, now=SPEC_TIMESTAMP)
    with pytest.raises(SignatureError, match="too far"):
        verify(SPEC_SECRET, sent, SPEC_BODY, now=SPEC_TIMESTAMP + 301)
    with pytest.raises(SignatureError, match="missing"):
        verify(SPEC_SECRET, {"webhook-id": SPEC_ID}, SPEC_BODY, now=SPEC_TIMESTAMP)


def test_new_secrets_are_whsec_and_24_random_bytes():
    one, two = new_secret(), new_secret()
    assert one.startswith("whsec_")
    assert len(base64.b64decode(one.removeprefix("whsec_"))) == 24
    assert one != two
