"""How public pages (a link's, an upload request's) name the owner."""

from django.conf import settings


def owner_shown(owner) -> str:
    """An owner as public pages name them ("" when LINK_SHOWS_OWNER is off)."""
    if not settings.LINK_SHOWS_OWNER:
        return ""
    return owner.get_full_name() or owner.get_username()
