"""Keep live share tokens out of every log line.

Django's request logger writes the path of every 4xx ("Gone: /s/<token>"),
and a token in a log is a working link for whoever reads the log. Only the
first characters are kept: enough to tell links apart, useless to open one.
"""

import logging
import re

SHOWN = 6
TOKEN_IN_PATH = re.compile(rf"(/s/)([A-Za-z0-9_-]{{{SHOWN}}})[A-Za-z0-9_-]+")
# The admin's share search takes a whole token (?q=<token>, also URL-encoded
# in the log-in page's ?next=), and access logs write the query string: a
# token-like search term is shortened too.
TOKEN_IN_SEARCH = re.compile(
    rf"((?:[?&]|%3[Ff]|%26)q(?:=|%3[Dd]))([A-Za-z0-9_-]{{{SHOWN}}})[A-Za-z0-9_-]{{10,}}(?=[&#%\s\"']|$)"
)


def redact(text: str) -> str:
    return TOKEN_IN_SEARCH.sub(r"\1\2…", TOKEN_IN_PATH.sub(r"\1\2…", text))


class RedactShareTokens(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = redact(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True
