"""How long to wait, as a person reads it: "Try again in 11 minutes." rather
than "in 621 seconds"."""


def wait_in_words(seconds: int) -> str:
    """Seconds up to a minute, then whole minutes, rounded up (never sooner
    than the limit allows)."""
    seconds = max(1, int(seconds))
    if seconds < 60:
        return f"{seconds} second" + ("" if seconds == 1 else "s")
    minutes = -(-seconds // 60)
    return f"{minutes} minute" + ("" if minutes == 1 else "s")
