"""A real, fast password hasher that counts its work, so a test can tell
whether a log-in attempt got as far as hashing a password."""

import threading

from django.contrib.auth.hashers import MD5PasswordHasher

_lock = threading.Lock()
_hashed = [0]


def hashing_count() -> int:
    return _hashed[0]


class CountingHasher(MD5PasswordHasher):
    # Checking a password (verify) and making one (make_password, which
    # Django runs for an unknown username) both go through encode().
    algorithm = "counting_md5"

    def encode(self, password, salt):
        with _lock:
            _hashed[0] += 1
        return super().encode(password, salt)
