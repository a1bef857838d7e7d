"""PostgreSQL's side of sharing.backends.

Round trips are what these paths cost most here: the expiry and each quick
download are one statement each (a data-modifying WITH holding the rows,
their events and the outboxes' rows), and rows are locked rather than the
database.
"""


def plain_cursor(connection):
    """Django's own cursor: on PostgreSQL its wrapper costs little beside the round trip."""
    return connection.cursor()
