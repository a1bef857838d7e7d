"""Recovery codes: for when the phone with the authenticator app is lost.

Ten random codes, shown once when the app is set up and kept as SHA-256
digests (each has 50 random bits: a slow hash would add nothing a guesser
could be slowed by, and the guesses are rate limited). Using one deletes
its row; a row count of 1 is the only way it is accepted, so it works once
however many requests race with it."""

import hashlib
import secrets

from signin.models import RecoveryCode

COUNT = 10
ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"  # no 0/o, 1/l/i: read off paper
LENGTH = 10  # characters, shown as two groups of five


def normalized(code: str) -> str:
    return "".join(str(code).split()).replace("-", "").lower()


def digest_of(code: str) -> str:
    return hashlib.sha256(normalized(code).encode()).hexdigest()


def new_code() -> str:
    raw = "".join(secrets.choice(ALPHABET) for _ in range(LENGTH))
    return f"{raw[:5]}-{raw[5:]}"


def replace_codes(user) -> list[str]:
    """New codes for `user` (the old ones stop working); return them."""
    codes = [new_code() for _ in range(COUNT)]
    delete_codes(user)
    RecoveryCode.objects.bulk_create(RecoveryCode(user_id=user.pk, digest=digest_of(code)) for code in codes)
    return codes


def delete_codes(user) -> None:
    RecoveryCode.objects.filter(user_id=user.pk).delete()


def use_code(user, code: str) -> bool:
    """Is `code` one of the user's unused recovery codes? Uses it up if so."""
    if not normalized(code):
        return False
    deleted, _ = RecoveryCode.objects.filter(user_id=user.pk, digest=digest_of(code)).delete()
    return deleted == 1


def codes_left(user) -> int:
    return RecoveryCode.objects.filter(user_id=user.pk).count()
