"""How many tries a person has left before a guessing limit pauses them, as
they read it under a form that refused their password: told before the
pause, not only once it has come."""

from django.utils.translation import gettext as _
from django.utils.translation import ngettext


def tries_left_in_words(count: int) -> str:
    """ "9 tries left before a pause." (none left: the next one waits)."""
    if count <= 0:
        return _("No tries left: the next one has to wait.")
    return ngettext("%(count)d try left before a pause.", "%(count)d tries left before a pause.", count) % {
        "count": count
    }
