"""Keep secrets in URLs out of every log line.

A URL can be a credential: a share's link (`/s/<token>`), an upload
request's link (`/r/<token>`), a webhook endpoint whose receiver checks a
key in its query string or its userinfo. Django's request logger writes the
path of every 4xx ("Gone: /s/<token>"), gunicorn's access log the request
line and the referrer, the webhook worker the endpoint it failed to reach;
each of those lines, read by whoever reads the logs, would open the link or
call the receiver. So every secret found in a logged line is shortened the
one way `shorten` says: a few first characters kept, enough to tell two
apart, far too few to use one. The filter below is installed on Django's
loggers and handlers (settings.LOGGING) and on gunicorn's
(microcloud.gunicorn_conf); docs/deployment.md, "Security notes", says why.
"""

import logging
import re

SHOWN = 6
ELLIPSIS = "…"


def shorten(secret: str) -> str:
    """`secret` as a log shows it: at most SHOWN of its first characters and
    never more than half of it (a short secret is not given away whole)."""
    return secret[: min(SHOWN, len(secret) // 2)] + ELLIPSIS


def _shortened(match: re.Match) -> str:
    return match.group(1) + shorten(match.group(2))


# A link's token after /s/ or /r/, also with its slashes percent-encoded (a
# log-in page's ?next=).
TOKEN_IN_PATH = re.compile(r"((?:/|%2[Ff])[sr](?:/|%2[Ff]))([A-Za-z0-9_-]{7,})")
# The admin's share search takes a whole token (?q=<token>, also URL-encoded
# in the log-in page's ?next=), and access logs write the query string: a
# token-like search term is shortened too.
TOKEN_IN_SEARCH = re.compile(r"((?:[?&]|%3[Ff]|%26)q(?:=|%3[Dd]))([A-Za-z0-9_-]{16,})(?=[&#%\s\"']|$)")
# An absolute URL's userinfo (user:password@) and query string: what a
# webhook receiver may take as its key.
USERINFO = re.compile(r"(\bhttps?://)([^\s/?#@\"']+)(?=@)")
QUERY = re.compile(r"(\bhttps?://[^\s?#\"']*\?)([^\s#\"']+)")


def redact(text: str) -> str:
    """`text` with every secret of a URL in it shortened."""
    for pattern in (TOKEN_IN_PATH, TOKEN_IN_SEARCH, USERINFO, QUERY):
        text = pattern.sub(_shortened, text)
    return text


class RedactShareTokens(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = redact(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True
