"""Sizes and moments as every page prints them: one formatter for each.

On the server these functions (and their filters, pages.templatetags.units);
in the browser pages/static/pages/units.js, which formats sizes with the
words size_words() takes from this same formatter, so a size reads the same
during an upload as in the list afterwards ("39 bytes", "103.4 KB"; in
French "39 octets", "103,4 Ko"). Moments are printed in UTC with their zone
named, and shown by the pages' script in the reader's own zone
(links/static/links/timeleft.js, showLocalTimes).
"""

from datetime import UTC, datetime

from django.template.defaultfilters import filesizeformat
from django.utils import formats

# A size over each step of 1024 (KB, MB, GB, TB, PB), as Django's
# filesizeformat names them; the browser reads a size's step the same way.
STEPS = 5
SAMPLE = 1.5  # a value whose number is printed with one decimal, in any step


def file_size(size: int) -> str:
    """A size in bytes as people read it: Django's filesizeformat, 1024-based."""
    return filesizeformat(size)


def size_words() -> dict:
    """The browser's formatter's words, in the active language, taken from
    file_size itself: each unit's pattern with {n} where its number goes,
    and the decimal separator. Bytes come as their patterns for 0, 1 and
    more, which is every plural form English and French have."""
    number = formats.number_format(SAMPLE, 1)
    return {
        "bytes": [file_size(count).replace(str(count), "{n}", 1) for count in (0, 1, 2)],
        "steps": [file_size(int(SAMPLE * 1024**step)).replace(number, "{n}", 1) for step in range(1, STEPS + 1)],
        "decimal": formats.get_format("DECIMAL_SEPARATOR"),
    }


def moment(when: datetime) -> str:
    """A moment as every page prints it, to the second, in UTC."""
    return formats.date_format(when.astimezone(UTC), "j M Y, H:i:s") + " UTC"
