"""Limits per client address that only spread load (a public endpoint's
requests, as opposed to guesses at a secret): with the shared counters out
of reach they let requests through rather than refuse every client, while
limits guarding secrets fail closed (ratelimit.limits raises)."""

import logging

from ratelimit.limits import CountersUnavailable, Decision, RateLimit, client_address

logger = logging.getLogger(__name__)


def allowed_by_address(limit: RateLimit, request) -> Decision:
    """Count one request of the client against `limit`, keyed by its address."""
    try:
        return limit.hit(client_address(request))
    except CountersUnavailable:
        logger.warning("rate counters out of reach: %s requests are not limited meanwhile", limit.scope)
        return Decision(True, 0, limit.limit)
