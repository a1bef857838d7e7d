"""How long to wait, as a person reads it: "Try again in 11 minutes." rather
than "in 621 seconds", in the active language."""

from django.utils.translation import ngettext


def wait_in_words(seconds: int) -> str:
    """Seconds up to a minute, then whole minutes, rounded up (never sooner
    than the limit allows)."""
    seconds = max(1, int(seconds))
    if seconds < 60:
        return ngettext("%(count)d second", "%(count)d seconds", seconds) % {"count": seconds}
    minutes = -(-seconds // 60)
    return ngettext("%(count)d minute", "%(count)d minutes", minutes) % {"count": minutes}
