"""The transactional outbox: deliveries are written with the events they carry.

Every ShareEvent is written inside the transaction of the change it records;
its deliveries (one per active endpoint of the share's owner that wants its
kind) are inserted by one INSERT ... SELECT in that same transaction
(webhooks.fanout), so an event that commits has its deliveries and one that
rolls back has none:

- events saved by the models (ShareEvent.record, save_all) reach
  `add_deliveries` through the share_events_saved signal (sharing never
  imports this app);
- the paths that write events in raw SQL (the expiry, the quick downloads)
  take EventDeliveries through sharing.models.outboxes: its part on their
  database (webhooks.backends) joins their data-modifying WITH, or runs on
  their raw connection in their transaction. Their events'
  share_events_saved then says outboxed=True, and add_deliveries leaves
  them alone.

With no endpoint the INSERT finds nothing to join: an index probe, no write.
"""

from django.db import connections
from django.dispatch import receiver

from sharing.models import ShareEvent
from sharing.models.outboxes import add_event_outbox
from sharing.signals import share_events_saved
from webhooks import backends
from webhooks.fanout import EVENT, insert_select


@receiver(share_events_saved, dispatch_uid="webhooks.outbox")
def add_deliveries(sender, events: list[ShareEvent], using: str, outboxed: bool = False, **kwargs) -> None:
    """Insert the deliveries of `events` (just saved, in the caller's
    transaction), unless the statement that saved them did (`outboxed`)."""
    if outboxed:
        return
    ids = [event.pk for event in events if event.pk is not None]
    if not ids:
        return
    connection = connections[using]
    placeholders = ", ".join(["%s"] * len(ids))
    sql = insert_select(backends.for_connection(connection).WANTS, EVENT, f"WHERE e.id IN ({placeholders})")
    with connection.cursor() as cursor:
        cursor.execute(sql, ids)


class EventDeliveries:
    """The outbox's part in the statements that write events in raw SQL
    (sharing.models.outboxes): its database's module of webhooks.backends."""

    for_connection = staticmethod(backends.for_connection)


add_event_outbox(EventDeliveries)
