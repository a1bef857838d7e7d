"""Rate limits on public links, and the link password check.

Counts live in the shared limiter (ratelimit: Redis when REDIS_URL is set,
else a store all processes of the machine share), so every worker and node
sees the same numbers.
"""

import logging

from django.conf import settings
from django.contrib.auth import hashers

from ratelimit.limits import CountersUnavailable, RateLimit, client_address, client_ip
from sharing.models import Share, Visitor

logger = logging.getLogger(__name__)

PASSWORD_HEADER = "X-Share-Password"

WRONG_PASSWORDS_BY_LINK = RateLimit("link-password", limit=10, window=600)
WRONG_PASSWORDS_BY_ADDRESS = RateLimit("link-password-address", limit=30, window=600)


def request_allowed(request) -> tuple[bool, int]:
    """Count one public-link request of the client; return (allowed, retry_after)."""
    # Generous (LINK_RATE_LIMIT a minute): a browser resuming a big download
    # makes a request per resume.
    by_address = RateLimit("link-address", limit=settings.LINK_RATE_LIMIT, window=60)
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


def try_password(request, share: Share | None, token: str, password: str) -> tuple[str, int | None]:
    """Check a password given for the link `token` (share None when there is
    no such link). Return ("ok", None), ("wrong", None) or ("rate_limited",
    retry_after). A missing link answers exactly like a wrong password, after
    the same hashing work, so guesses learn nothing about which links exist.
    Every attempt is counted before the password is hashed and refunded if
    it was right, so parallel guesses cannot slip past the limits. A wrong
    password for a real link's password is recorded in its history (a
    refusal by the limits is not: nothing was tried).
    """
    address = client_address(request)
    by_link = WRONG_PASSWORDS_BY_LINK.hit(token)
    if not by_link.allowed:
        return "rate_limited", by_link.retry_after
    by_address = WRONG_PASSWORDS_BY_ADDRESS.hit(address)
    if not by_address.allowed:
        WRONG_PASSWORDS_BY_LINK.refund(token)
        return "rate_limited", by_address.retry_after
    if share is None or not share.has_password:
        hashers.make_password("no such link")  # the same work a real check costs
        return "wrong", None
    if share.check_password(password):
        WRONG_PASSWORDS_BY_LINK.refund(token)
        WRONG_PASSWORDS_BY_ADDRESS.refund(address)
        return "ok", None
    share.record_wrong_password(visitor(request))
    return "wrong", None
