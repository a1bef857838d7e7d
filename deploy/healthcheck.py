"""The image's HEALTHCHECK: `python -m deploy.healthcheck`, exit 0 when healthy.

A web container (role `serve` or `all`) is healthy while its server answers
GET /healthz on its PORT; a daemon container (`expiry`) has no port, and
runs exactly as long as its daemon does (the daemon is PID 1), so it is
healthy while it runs. Whether the whole service is ready (database,
migrations, storage, a daemon holding the lease) is /readyz's to say.
Standard library only, so a check costs a bare interpreter's start.
"""

import os
import sys
import urllib.error
import urllib.request

TIMEOUT = 4.0


def web_role() -> bool:
    """Whether PID 1 is a web server (gunicorn, or serve.py beside the daemon)."""
    try:
        with open("/proc/1/cmdline", "rb") as handle:
            words = handle.read().split(b"\0")
    except OSError:
        return True
    return not any(word == b"runexpiry" for word in words)


def host_header() -> str:
    """A name ALLOWED_HOSTS accepts: Django answers any other with a 400."""
    for name in os.environ.get("ALLOWED_HOSTS", "localhost").split(","):
        name = name.strip().lstrip(".")
        if name and name != "*":
            return name
    return "localhost"


def main() -> int:
    if not web_role():
        return 0
    port = os.environ.get("PORT", "8000").strip() or "8000"
    request = urllib.request.Request(f"http://127.0.0.1:{port}/healthz", headers={"Host": host_header()})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return 0 if response.status == 200 else 1
    except (OSError, urllib.error.URLError) as error:
        print(f"/healthz: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
