"""Rate limits on public links, and the link password check.

Counts live in the shared limiter (ratelimit: Redis when REDIS_URL is set,
else a store all processes of the machine share), so every worker and node
sees the same numbers.
"""

import logging
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import hashers

from links.remembered import RememberedPasswords
from ratelimit.limits import CountersUnavailable, RateLimit, client_address, client_ip
from sharing.models import Share, Visitor

logger = logging.getLogger(__name__)

PASSWORD_HEADER = "X-Share-Password"

# Wrong passwords are counted per (link, client address), so a guesser locks
# out only itself: the recipient, from another address, still gets in. The
# per-link ceiling stops a guesser spread over many addresses; it is high
# enough that one address cannot reach it (it stops at its own 10 first).
WRONG_PASSWORDS_BY_VISITOR = RateLimit("link-password-visitor", limit=10, window=600)
WRONG_PASSWORDS_BY_LINK = RateLimit("link-password", limit=200, window=600)
WRONG_PASSWORDS_BY_ADDRESS = RateLimit("link-password-address", limit=30, window=600)
# Every password one address makes this server hash, right or wrong, never
# given back: a right password is remembered (links.remembered) and costs
# about one hash per worker and hour, so this is far above what a recipient
# needs, and still bounds what a client that knows passwords (of one link
# or many) can cost: 200 hashes of ~0.2 s in 10 minutes, under a tenth of a core.
HASHED_PASSWORDS_BY_ADDRESS = RateLimit("link-password-hashed", limit=200, window=600)

REMEMBERED = RememberedPasswords()

# Public-link requests are counted up to this many at once per worker
# (ratelimit.ahead): one shared write per request was a seventh of a hot
# link's CPU. Password attempts are counted one by one (they are refunded).
LINK_AHEAD = 32


def request_allowed(request) -> tuple[bool, int]:
    """Count one public-link request of the client; return (allowed, retry_after)."""
    # Generous (LINK_RATE_LIMIT a minute): a browser resuming a big download
    # makes a request per resume.
    by_address = RateLimit("link-address", limit=settings.LINK_RATE_LIMIT, window=60, ahead=LINK_AHEAD)
    try:
        decision = by_address.hit(client_address(request))
    except CountersUnavailable:
        # This limit only spreads load: with the counters out of reach (Redis
        # down) links keep working. Password attempts, which guard secrets,
        # still fail closed (try_password raises, the view answers 503).
        logger.warning("rate counters out of reach: public link requests are not limited meanwhile")
        return True, 0
    return decision.allowed, decision.retry_after


def visitor(request) -> Visitor:
    """Who is asking, for the share's history (the model truncates the
    address as EVENT_CLIENT_ADDRESS says)."""
    return Visitor(address=client_ip(request), user_agent=request.headers.get("User-Agent", ""))


def header_password(request) -> str | None:
    """The password a script sent, if any. Headers arrive as Latin-1; the
    bytes are read as UTF-8 so any password can be sent (curl sends bytes)."""
    raw = request.headers.get(PASSWORD_HEADER)
    if raw is None:
        return None
    try:
        return raw.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return raw


@dataclass(frozen=True)
class PasswordCheck:
    """What a password check found: "ok", "wrong" or "rate_limited"."""

    outcome: str
    retry_after: int | None = None  # rate_limited: seconds until a try is allowed
    tries_left: int | None = None  # wrong: tries after this one before the limits refuse this client


def try_password(request, share: Share | None, token: str, password: str) -> PasswordCheck:
    """Check a password given for the link `token` (share None when there is
    no such link), recording a wrong one in the share's history: check_password."""
    wrong = share.record_wrong_password if share is not None else None
    return check_password(request, share, token, password, on_wrong=wrong)


def check_password(request, guarded, token: str, password: str, on_wrong=None) -> PasswordCheck:
    """Check a password given for the link `token` (a share's or an upload
    request's; `guarded` None when there is no such link).

    A password this address proved lately is known without hashing
    (links.remembered). Otherwise every attempt is counted before the
    password is hashed, and the wrong-password counts are refunded if it was
    right, so parallel guesses cannot slip past the limits; the hash itself
    stays counted (HASHED_PASSWORDS_BY_ADDRESS). A missing link answers
    exactly like a wrong password, after the same hashing work, so guesses
    learn nothing about which links exist. A wrong password is passed to
    `on_wrong` (a share records it in its history; a refusal by the limits
    is not: nothing was tried).
    """
    address = client_address(request)
    if (
        guarded is not None
        and guarded.has_password
        and REMEMBERED.knows(token, guarded.password_hash, password, address)
    ):
        return PasswordCheck("ok")
    wrong_counts = (
        (WRONG_PASSWORDS_BY_VISITOR, f"{token}|{address}"),
        (WRONG_PASSWORDS_BY_LINK, token),
        (WRONG_PASSWORDS_BY_ADDRESS, address),
    )
    counted = []
    tries_left = None
    for limit, ident in (*wrong_counts, (HASHED_PASSWORDS_BY_ADDRESS, address)):
        decision = limit.hit(ident)
        if not decision.allowed:
            for earlier, earlier_ident in counted:
                earlier.refund(earlier_ident)
            return PasswordCheck("rate_limited", retry_after=decision.retry_after)
        counted.append((limit, ident))
        tries_left = decision.remaining if tries_left is None else min(tries_left, decision.remaining)
    if guarded is None or not guarded.has_password:
        hashers.make_password("no such link")  # the same work a real check costs
        return PasswordCheck("wrong", tries_left=tries_left)
    if guarded.check_password(password):
        for limit, ident in wrong_counts:
            limit.refund(ident)
        REMEMBERED.remember(token, guarded.password_hash, password, address)
        return PasswordCheck("ok")
    if on_wrong is not None:
        on_wrong(visitor(request))
    return PasswordCheck("wrong", tries_left=tries_left)
