"""Where the databases differ: one backend module per database.

The domain modules (sharing.models) state each rule once, as SQL built from
sharing.models.state, and leave to their connection's backend only what its
database does its own way: which cursor a written-out statement goes
through, how the expiry's UPDATE and its events are sent, how a batch of
quick downloads is locked, recorded and completed. As in Django's
contrib/sessions/backends, the policy lives once and each backend does the
storage-specific work.

sharing.backends.sqlite and sharing.backends.postgresql expose the same
interface:

- plain_cursor(connection): a cursor for a statement written out;
- expire(connection, expiry, share_ids, order_limit): send the expiry of
  sharing.models.expiring (an Expiry: its UPDATE's parts) with its events
  and the outboxes' rows, in one transaction; the expired rows, id first;
- QuickDownloads(connection, cursor, download_table): one batch of
  sharing.models.quick_downloads in its transaction: begin(jobs,
  share_table) before "now" is read, record(job, decided, allowed) for each
  download (its event, or None), record_event(job, decided, exists) for
  each event written with them (a delivery receipt), end() after the
  batch's events.

for_connection() is the one place that picks a backend by vendor.
"""

from django.db import NotSupportedError

from sharing.backends import postgresql, sqlite

_BACKENDS = {"sqlite": sqlite, "postgresql": postgresql}


def for_connection(connection):
    """The backend module for `connection`'s database."""
    backend = _BACKENDS.get(connection.vendor)
    if backend is None:
        raise NotSupportedError(f"sharing has no backend for {connection.vendor}")
    return backend
