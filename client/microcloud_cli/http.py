"""One HTTP request at a time over the standard library, and the server's
error bodies turned into one line ({"detail": ...}, field errors, or a
link's plain-text answer)."""

import http.client
import json
import socket
import ssl
from urllib.parse import urljoin, urlsplit

from microcloud_cli import __version__
from microcloud_cli.errors import Failure

USER_AGENT = f"microcloud-cli/{__version__}"
REDIRECTS = {301, 302, 303, 307, 308}
# Headers that prove something to our server and must not follow a redirect
# to another origin (an unlimited link may send the client to a bucket).
SECRET_HEADERS = {"authorization", "x-share-password"}


def open_request(method: str, url: str, *, headers: dict | None = None, body=None, timeout: float = 60):
    """Send one request; the answer is returned unread (the caller streams
    or reads it)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Failure(f"not an http(s) URL: {url}")
    if parts.scheme == "https":
        connection = http.client.HTTPSConnection(
            parts.hostname, parts.port, timeout=timeout, context=ssl.create_default_context()
        )
    else:
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    target = parts.path or "/"
    if parts.query:
        target += f"?{parts.query}"
    sent = {"User-Agent": USER_AGENT, **(headers or {})}
    try:
        connection.request(method, target, body=body, headers=sent)
        return connection.getresponse()
    except (OSError, http.client.HTTPException) as error:
        connection.close()
        raise Failure(f"cannot reach {parts.scheme}://{parts.netloc}: {reason(error)}") from None


def reason(error: Exception) -> str:
    if isinstance(error, socket.timeout):
        return "no answer in time"
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    return str(error) or type(error).__name__


def get_following(url: str, *, headers: dict, max_redirects: int = 5):
    """GET `url`, following redirects; our secrets stay with our origin."""
    origin = urlsplit(url)[:2]
    for _ in range(max_redirects + 1):
        response = open_request("GET", url, headers=headers)
        location = response.getheader("Location")
        if response.status not in REDIRECTS or not location:
            return response
        response.read()
        url = urljoin(url, location)
        if urlsplit(url)[:2] != origin:
            headers = {name: value for name, value in headers.items() if name.lower() not in SECRET_HEADERS}
    raise Failure(f"too many redirects from {url}")


def error_text(response, body: bytes | None = None) -> str:
    """One line saying what the server refused, from its body."""
    body = response.read() if body is None else body
    text = body.decode("utf-8", "replace").strip()
    if "json" in (response.getheader("Content-Type") or ""):
        try:
            document = json.loads(text)
        except ValueError:
            document = None
        if isinstance(document, dict):
            if isinstance(document.get("detail"), str):
                return document["detail"]
            return "; ".join(
                f"{field}: {' '.join(map(str, why)) if isinstance(why, list) else why}"
                for field, why in document.items()
            )
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first if first and not first.startswith("<") else f"the server answered {response.status} {response.reason}"


def read_json(response, *, expect: tuple[int, ...] = (200,)):
    body = response.read()
    if response.status not in expect:
        raise Failure(error_text(response, body))
    try:
        return json.loads(body) if body else None
    except ValueError:
        raise Failure(f"the server's answer is not JSON (status {response.status})") from None
