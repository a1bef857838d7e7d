"""The one kind of error the command reports: a readable line, then exit 1."""


class Failure(Exception):
    """Something the user can act on; its text is the whole message."""
