"""Where the databases differ for webhooks: one backend module per database.

The outbox (webhooks.outbox) and the worker (webhooks.worker) state their
rules once (webhooks.fanout's INSERT ... SELECT, the worker's claimable
row) and leave to their connection's backend what its database does its
own way. webhooks.backends.sqlite and webhooks.backends.postgresql expose
the same interface:

- WANTS: SQL, endpoint `ep` lists the kind of event `e`;
- claim_pick(cursor, pick, params): the sub-select a claim's UPDATE runs,
  or None when a claim can be skipped (nothing is due);
- idle_mark(connection) and unchanged_since(connection, mark): an idle
  look's mark when nothing at all is pending (None: none kept), and
  whether no commit can have added a delivery since it was taken;
- the outbox's part in the raw-SQL event paths, as the same database's
  module of sharing.backends asks it (its docstring says what).

for_connection() is the one place that picks a backend by vendor.
"""

from django.db import NotSupportedError

from webhooks.backends import postgresql, sqlite

_BACKENDS = {"sqlite": sqlite, "postgresql": postgresql}


def for_connection(connection):
    """The backend module for `connection`'s database."""
    backend = _BACKENDS.get(connection.vendor)
    if backend is None:
        raise NotSupportedError(f"webhooks has no backend for {connection.vendor}")
    return backend
