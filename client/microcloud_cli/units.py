"""Sizes and lifetimes as people type and read them."""

import re
from datetime import datetime

from microcloud_cli.errors import Failure

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def size_text(count: int) -> str:
    """As the web pages write sizes (Django's filesizeformat: "39 bytes",
    "103.4 KB", in steps of 1024)."""
    if count < 1024:
        return f"{count} byte" if count == 1 else f"{count} bytes"
    value = float(count)
    for unit in ("KB", "MB", "GB", "TB"):
        value /= 1024
        if value < 1024:
            return f"{value:.1f} {unit}"
    return f"{value / 1024:.1f} PB"


def lifetime(text: str) -> dict:
    """`--expires`: seconds ("3600"), a duration ("90m", "2h", "7d", "1h30m")
    or an ISO 8601 moment with its offset; the API's own field for each."""
    text = text.strip()
    if text.isdigit():
        return {"expires_in": int(text)}
    if re.fullmatch(r"(\d+[smhdw])+", text):
        seconds = sum(int(n) * UNITS[unit] for n, unit in re.findall(r"(\d+)([smhdw])", text))
        return {"expires_in": seconds}
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise Failure(
            f"--expires {text!r}: give seconds (3600), a duration (90m, 2h, 7d) or a moment (2026-12-31T18:00:00Z)"
        ) from None
    if moment.tzinfo is None:
        raise Failure(f"--expires {text!r}: give the time zone (Z for UTC, or +02:00 and the like)")
    return {"expires_at": moment.isoformat()}
