"""Right link passwords remembered for a while, so that proving one costs one
hash rather than one per request.

A link's password (or an upload request's) is checked with the deployment's
password hasher, slow by design (PBKDF2: about 0.2 s of CPU). A script sends
it with every request (X-Share-Password), and every resume (curl -C -) or
parallel piece (aria2c -x4) is a request: each cost a hash, and a client
that knew the password could keep the server's cores busy. Once a password
was right, this process remembers a keyed digest of what was checked for
REMEMBER_SECONDS, and the same check again costs an HMAC.

What the digest covers, and why:
- the link's token and its stored hash: a changed password (or one the
  hasher stored anew) matches no memory of the old one;
- the password as given: only a right one is ever remembered;
- the client's address as the limits count it: a memory answers only the
  address that proved the password, so it never lets an address skip the
  guessing limits (one the limits refuse could otherwise tell right from
  wrong guesses for free), and the recipient who proved it is not locked
  out by other addresses' guesses reaching the link's ceiling;
- a key derived from SECRET_KEY: what is held tells nothing about a
  password to whoever reads it.

Kept per process and bounded (the least recently used is forgotten first):
a worker that has not seen the client yet hashes once; nothing is written
or shared.
"""

import threading
import time
from collections import OrderedDict

from django.utils.crypto import salted_hmac

REMEMBER_SECONDS = 3600
MOST_REMEMBERED = 4096  # 32-byte digests: well under a MiB per process


def _digest(token: str, stored_hash: str, password: str, address: str) -> bytes:
    # Each part prefixed with its length: no two different checks read alike.
    text = "".join(f"{len(part)}:{part}" for part in (token, stored_hash, address, password))
    return salted_hmac("links.remembered-password", text.encode("utf-8", "surrogatepass"), algorithm="sha256").digest()


class RememberedPasswords:
    """The right passwords this process checked lately, as digests."""

    def __init__(self, *, seconds: float = REMEMBER_SECONDS, most: int = MOST_REMEMBERED, clock=time.monotonic):
        self.seconds = seconds
        self.most = most
        self.clock = clock
        self._lock = threading.Lock()  # guards this process's bookkeeping only
        self._until: OrderedDict[bytes, float] = OrderedDict()

    def knows(self, token: str, stored_hash: str, password: str, address: str) -> bool:
        """Whether `password` was right for the link `token` (whose stored
        hash is `stored_hash`) from `address`, less than `seconds` ago."""
        digest = _digest(token, stored_hash, password, address)
        now = self.clock()
        with self._lock:
            until = self._until.get(digest)
            if until is None:
                return False
            if until <= now:
                del self._until[digest]
                return False
            self._until.move_to_end(digest)
            return True

    def remember(self, token: str, stored_hash: str, password: str, address: str) -> None:
        """Remember that `password` was right (knows() until `seconds` from now)."""
        digest = _digest(token, stored_hash, password, address)
        with self._lock:
            self._until[digest] = self.clock() + self.seconds
            self._until.move_to_end(digest)
            while len(self._until) > self.most:
                self._until.popitem(last=False)
