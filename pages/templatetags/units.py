"""{% load units %}: the pages' one formatter for sizes and for moments
(pages.units) as filters, and the words the browser's formatter needs."""

from datetime import datetime

from django import template
from django.utils.html import format_html, json_script

from pages import units

register = template.Library()


@register.filter
def size(value) -> str:
    """{{ file.size|size }}: "39 bytes", "103.4 KB"."""
    return units.file_size(value)


@register.filter
def moment(value: datetime | None) -> str:
    """{{ share.expires_at|moment }}: a <time> the pages' script shows in the
    reader's zone; in UTC, named, without JavaScript."""
    if value is None:
        return ""
    return format_html('<time class="local-time" datetime="{}">{}</time>', value.isoformat(), units.moment(value))


@register.simple_tag
def size_words():
    """The words of pages/units.js, for the page's language (an inert JSON block)."""
    return json_script(units.size_words(), "size-words")
