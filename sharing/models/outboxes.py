"""Rows other apps write with a share's events, for the paths that write
events in raw SQL.

Events saved through the models reach other apps through share_events_saved,
sent inside their transaction. Two paths write events in raw SQL instead, so
that their statements stay few: the one expiry path (sharing.models.expiring)
and the quick downloads (sharing.models.quick_downloads). An
app registers an EventOutbox here (the webhooks outbox does) and those paths
have their database's backend (sharing.backends) put its rows into their own
statement or transaction, atomic with the events.
"""

from typing import Protocol


class EventOutbox(Protocol):
    def for_connection(self, connection):
        """This outbox's part on `connection`'s database: what that
        database's module of sharing.backends asks of an outbox (its
        docstring says what)."""


_outboxes: list[EventOutbox] = []


def add_event_outbox(outbox: EventOutbox) -> None:
    """Have `outbox` write its rows wherever events are written in raw SQL (once)."""
    if outbox not in _outboxes:
        _outboxes.append(outbox)


def event_outboxes(connection) -> list:
    """Every registered outbox's part on `connection`'s database."""
    return [outbox.for_connection(connection) for outbox in _outboxes]
