"""What a browser context asked the network for, and the rules it must keep.

Every context the fixtures make carries a RequestLog. A test fails when one of
its pages loads anything from another origin (pages must work offline and leak
no visitor to a third party), when the server answers 5xx (no request ever
produces a 500), or when a static file a page needs (style sheet, script,
image, font) fails to load.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from playwright.sync_api import BrowserContext, Page, Request, Response

# Resource types whose failure means the page shows or works wrongly. A
# document or a fetch may fail on purpose (a 410 for an expired link, a 400
# for bad input): those are the test's own business.
STATIC_TYPES = frozenset({"stylesheet", "script", "image", "font", "media"})
# The context closing, or a navigation superseding a load, cancels requests:
# nothing was wrong with the resource.
CANCELLED = "net::ERR_ABORTED"
# URLs that never leave the machine: inline data, the page's own blobs, and
# the browser's built-in parts (Chromium's PDF viewer is an extension page
# with chrome:// resources).
LOCAL_SCHEMES = frozenset({"data", "blob", "about", "javascript", "chrome", "chrome-extension"})
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
SOCKET_SCHEMES = {"ws": "http", "wss": "https"}

_logs: weakref.WeakKeyDictionary[BrowserContext, RequestLog] = weakref.WeakKeyDictionary()


def origin_of(url: str) -> tuple[str, str, int] | None:
    """Return (scheme, host, port) as the same-origin rule compares them; None for local URLs."""
    parts = urlsplit(url)
    if parts.scheme in LOCAL_SCHEMES:
        return None
    scheme = SOCKET_SCHEMES.get(parts.scheme, parts.scheme)
    return scheme, (parts.hostname or "").lower(), parts.port or DEFAULT_PORTS.get(parts.scheme, 0)


@dataclass
class RequestLog:
    """Every URL a context's pages requested, and what went wrong loading them."""

    origin: str
    urls: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)

    def foreign(self) -> list[str]:
        own = origin_of(self.origin)
        return [url for url in self.urls if origin_of(url) not in (None, own)]

    def problems(self) -> list[str]:
        """Return one readable line per broken rule, empty when all is well."""
        lines = [f"request to another origin: {url}" for url in self.foreign()]
        return lines + self.broken

    def on_response(self, response: Response) -> None:
        request = response.request
        if response.status >= 500:
            self.broken.append(f"server error {response.status}: {request.method} {response.url}")
        elif response.status >= 400 and request.resource_type in STATIC_TYPES:
            self.broken.append(f"{request.resource_type} answered {response.status}: {response.url}")

    def on_failed(self, request: Request) -> None:
        if request.resource_type in STATIC_TYPES and request.failure != CANCELLED:
            self.broken.append(f"{request.resource_type} failed ({request.failure}): {request.url}")


def watch(context: BrowserContext, origin: str) -> RequestLog:
    """Record every request the context's pages make (including WebSockets) from now on."""
    log = RequestLog(origin)
    context.on("request", lambda request: log.urls.append(request.url))
    context.on("response", log.on_response)
    context.on("requestfailed", log.on_failed)
    context.on("page", lambda page: page.on("websocket", lambda socket: log.urls.append(socket.url)))
    _logs[context] = log
    return log


def request_log(page_or_context: Page | BrowserContext) -> RequestLog:
    context = page_or_context.context if isinstance(page_or_context, Page) else page_or_context
    try:
        return _logs[context]
    except KeyError:
        raise LookupError("this context was not made by the browser fixtures, so nothing recorded it") from None


def no_foreign_requests(page_or_context: Page | BrowserContext) -> None:
    """Fail if any request so far went to another origin than the live server's."""
    foreign = request_log(page_or_context).foreign()
    assert not foreign, "requests to another origin:\n  " + "\n  ".join(foreign)


def no_broken_requests(page_or_context: Page | BrowserContext) -> None:
    """Fail if the server answered 5xx or a static file failed to load so far."""
    broken = request_log(page_or_context).broken
    assert not broken, "broken requests:\n  " + "\n  ".join(broken)


def close_checked(contexts: list[BrowserContext]) -> None:
    """Close the contexts, then fail if any of their pages broke the request rules."""
    for context in contexts:
        context.close()
    problems = [problem for context in contexts for problem in request_log(context).problems()]
    assert not problems, "the browser broke the request rules:\n  " + "\n  ".join(problems)
