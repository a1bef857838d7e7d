"""Conditional requests on a shared file (RFC 9110, section 13): If-Match
and If-None-Match against the file's strong ETag. If-Range is the range's
business (links.ranges). The file has no Last-Modified, so the date
preconditions have nothing to compare and are ignored, as the RFC says.
"""

import re
from http import HTTPStatus

ENTITY_TAG = re.compile(r'\s*(W/)?"([^"]*)"\s*')


def _tags(header: str) -> list[tuple[bool, str]] | None:
    """The (weak, opaque tag) pairs of a list header; None when malformed."""
    tags = []
    for part in header.split(","):
        match = ENTITY_TAG.fullmatch(part)
        if match is None:
            return None
        tags.append((bool(match[1]), match[2]))
    return tags


def _opaque(etag: str) -> str:
    return etag.strip('"')


def precondition_status(headers, etag: str) -> int | None:
    """412 or 304 when the request's preconditions say so, else None (the
    request goes on). Evaluated in the RFC's order: If-Match first (strong
    comparison), then If-None-Match (weak comparison; the link answers
    only GET and HEAD, which get 304). A malformed header is ignored."""
    if_match = headers.get("If-Match")
    if if_match is not None and if_match.strip() != "*":
        tags = _tags(if_match)
        if tags is not None and not any(not weak and tag == _opaque(etag) for weak, tag in tags):
            return HTTPStatus.PRECONDITION_FAILED
    if_none_match = headers.get("If-None-Match")
    if if_none_match is not None:
        if if_none_match.strip() == "*":
            return HTTPStatus.NOT_MODIFIED
        tags = _tags(if_none_match)
        if tags is not None and any(tag == _opaque(etag) for _, tag in tags):
            return HTTPStatus.NOT_MODIFIED
    return None
