"""Rows other apps write with a share's events, for the paths that write
events in raw SQL.

Events saved through the models reach other apps through share_events_saved,
sent inside their transaction. Two paths write events in raw SQL instead, so
that their statements stay few: the one expiry path (sharing.models.expiring)
and the quick downloads (sharing.models.quick_downloads). An
app registers an EventOutbox here (the webhooks outbox does) and those paths
put its SQL into their own statement or transaction: on PostgreSQL a CTE of
their data-modifying WITH (one round trip, atomic with the events), on
SQLite statements on the raw connection inside the same transaction.
"""

from typing import Protocol


class EventOutbox(Protocol):
    def postgres_cte(self, events_cte: str) -> str:
        """A ", name AS (...)" CTE for a data-modifying WITH, reading the rows
        `events_cte` inserted (id, share_id, kind, at)."""

    def sqlite_mark(self, raw):
        """Before the events are inserted: where they will start, or None when
        there is nothing to add."""

    def sqlite_add(self, raw, mark) -> None:
        """After the events are inserted, in the same transaction."""


_outboxes: list[EventOutbox] = []


def add_event_outbox(outbox: EventOutbox) -> None:
    """Have `outbox` write its rows wherever events are written in raw SQL (once)."""
    if outbox not in _outboxes:
        _outboxes.append(outbox)


def postgres_ctes(events_cte: str) -> str:
    """Every registered outbox's CTE for a WITH whose `events_cte` inserted events."""
    return "".join(outbox.postgres_cte(events_cte) for outbox in _outboxes)


def sqlite_marks(raw) -> list:
    """SQLite, in the writing transaction before its events are inserted:
    each outbox's mark (None: it has nothing to add)."""
    return [(outbox, outbox.sqlite_mark(raw)) for outbox in _outboxes]


def sqlite_add_all(raw, marks: list) -> None:
    """SQLite, after the events are inserted: every marked outbox's rows."""
    for outbox, mark in marks:
        if mark is not None:
            outbox.sqlite_add(raw, mark)
