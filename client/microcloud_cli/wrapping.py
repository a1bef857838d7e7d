"""A password instead of the link's #fragment (docs/encryption.md, "A
password instead of the fragment"): the same bytes as the browser's
pages/static/pages/e2e_password.js.

PBKDF2-HMAC-SHA256 over the NFC-normalised password gives 32 bytes; HKDF
of those gives the AES-128-GCM key that wraps the link's secret and,
separately, the verifier the server checks as the link's password. The
wrapped secret, 65 bytes: version 1 | iterations (u32, big-endian) | salt
(16) | nonce (12) | the secret encrypted with its tag (32), the first 21
bytes as additional data. The server never sees the password or the secret.
"""

import base64
import secrets
import struct
import unicodedata
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

from microcloud_cli import ece
from microcloud_cli.errors import Failure

VERSION = 1
ITERATIONS = 600_000  # about a third of a second in a browser, as e2e_password.js
LEAST_ITERATIONS, MOST_ITERATIONS = 100_000, 10_000_000
KDF = "PBKDF2-SHA256"
SALT_BYTES = 16
NONCE_BYTES = 12
PARAMETERS_BYTES = 21
WRAPPED_BYTES = 65
WRAPPING_INFO = b"microcloud e2e wrapping key"
VERIFIER_INFO = b"microcloud e2e password verifier"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def from_b64url(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError:
        return b""


@dataclass(frozen=True)
class Derived:
    key: bytes  # wraps the secret
    verifier: str  # sent as the link's password


def derive(password: str, salt: bytes, iterations: int) -> Derived:
    material = unicodedata.normalize("NFC", password).encode()
    bits = PBKDF2HMAC(algorithm=hashes.SHA256(), length=32, salt=salt, iterations=iterations).derive(material)
    return Derived(
        key=ece.hkdf(bits, salt=b"", info=WRAPPING_INFO, length=16),
        verifier=b64url(ece.hkdf(bits, salt=b"", info=VERIFIER_INFO, length=16)),
    )


def parameters_bytes(salt: bytes, iterations: int) -> bytes:
    return struct.pack(">BI", VERSION, iterations) + salt


def wrap(secret: bytes, password: str, iterations: int = ITERATIONS) -> tuple[str, str]:
    """(verifier, wrapped secret in URL-safe base64)."""
    salt = secrets.token_bytes(SALT_BYTES)
    nonce = secrets.token_bytes(NONCE_BYTES)
    head = parameters_bytes(salt, iterations)
    derived = derive(password, salt, iterations)
    return derived.verifier, b64url(head + nonce + AESGCM(derived.key).encrypt(nonce, secret, head))


def check_parameters(parameters: dict) -> tuple[bytes, int]:
    """The salt and iterations of GET /s/<token>/key's answer."""
    salt = from_b64url(str(parameters.get("salt", "")))
    iterations = parameters.get("iterations")
    if parameters.get("kdf") != KDF or len(salt) != SALT_BYTES or not isinstance(iterations, int):
        raise Failure("the link's key derivation is not one this version knows; update microcloud")
    # The server's own bounds: a count past them would keep this command busy for minutes.
    if not LEAST_ITERATIONS <= iterations <= MOST_ITERATIONS:
        raise Failure(f"the link's key derivation asks for {iterations} iterations, outside what links use")
    return salt, iterations


def unwrap(wrapped_text: str, key: bytes) -> bytes:
    wrapped = from_b64url(wrapped_text)
    if len(wrapped) != WRAPPED_BYTES or wrapped[0] != VERSION:
        raise Failure("the link's wrapped key is not one of this format's; update microcloud")
    head, nonce = wrapped[:PARAMETERS_BYTES], wrapped[PARAMETERS_BYTES : PARAMETERS_BYTES + NONCE_BYTES]
    try:
        return AESGCM(key).decrypt(nonce, wrapped[PARAMETERS_BYTES + NONCE_BYTES :], head)
    except InvalidTag:
        raise Failure("the password does not open this link's key") from None
