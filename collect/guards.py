"""How often one client address may use upload requests' links: their pages
and their tus endpoints, counted together, REQUEST_RATE_LIMIT a minute.

A stranger holding a link could otherwise send as many requests as the
server answers (each chunk a sync and two write transactions), for the
owner's request and everyone else's. Counted before the request is looked
up, so guessing tokens costs the same. The counters are the shared ones of
the public links' limit (ratelimit), so every worker and node sees one count.
"""

from django.conf import settings

from ratelimit.limits import Decision, RateLimit
from ratelimit.per_address import allowed_by_address

# Counted up to this many at once per worker (ratelimit.ahead), as public
# links are: an uploader's chunks come in runs.
REQUEST_AHEAD = 32


def request_allowed(request) -> Decision:
    """Count one request of the client to an upload request's link."""
    limit = RateLimit("request-address", limit=settings.REQUEST_RATE_LIMIT, window=60, ahead=REQUEST_AHEAD)
    return allowed_by_address(limit, request)
