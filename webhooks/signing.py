"""Standard Webhooks signatures (https://www.standardwebhooks.com/).

The signed content is "<webhook-id>.<webhook-timestamp>.<body>", the key is
the base64 after the secret's "whsec_" prefix, and webhook-signature is
"v1,<base64 of HMAC-SHA256>" (several space-separated when keys rotate).
A dozen lines of stdlib, checked against the specification's test vector in
tests/test_webhooks_signing.py.
"""

import base64
import hashlib
import hmac

from webhooks.models import SECRET_PREFIX

# How far a receiver may trust a webhook-timestamp from its own clock.
TOLERANCE_SECONDS = 5 * 60


class SignatureError(ValueError):
    pass


def secret_key(secret: str) -> bytes:
    return base64.b64decode(secret.removeprefix(SECRET_PREFIX))


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The webhook-signature header for `body` sent as `msg_id` at `timestamp` (seconds)."""
    content = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret_key(secret), content, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def headers(secret: str, msg_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign(secret, msg_id, timestamp, body),
    }


def verify(secret: str, received: dict[str, str], body: bytes, *, now: float) -> None:
    """Raise SignatureError unless `received` (lower-case header names) signs
    `body` with `secret` and its timestamp is within TOLERANCE_SECONDS of `now`.
    What a receiver does; the tests use it as one."""
    try:
        msg_id, raw_timestamp, signatures = (
            received["webhook-id"],
            received["webhook-timestamp"],
            received["webhook-signature"],
        )
        timestamp = int(raw_timestamp)
    except (KeyError, ValueError):
        raise SignatureError("missing or malformed webhook headers") from None
    if abs(now - timestamp) > TOLERANCE_SECONDS:
        raise SignatureError("webhook-timestamp is too far from now")
    expected = sign(secret, msg_id, timestamp, body).encode()
    if not any(hmac.compare_digest(expected, given.encode()) for given in signatures.split()):
        raise SignatureError("no valid signature")
