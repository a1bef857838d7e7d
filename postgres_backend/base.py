"""Django's PostgreSQL backend with a health check that costs no round trip
while the connection is plainly alive.

With CONN_HEALTH_CHECKS on, Django checks a reused connection at the first
query of every request with `SELECT 1`: a round trip, and on a public
download one of the few the request makes (docs/benchmarks.md, "Hot link"). A server
that ends a connection (a restart, pg_terminate_backend, an idle timeout, a
pooler closing it) tells the client so: its last message or its close makes
the idle socket readable. So while the connection is idle outside a
transaction and its socket has nothing to read, nothing has ended it and
the check passes as it is; anything else (bytes waiting, a transaction left
open, a connection psycopg already knows is broken) goes to Django's own
`SELECT 1`, which closes the connection when it fails, as before.
"""

import select

from django.db.backends.postgresql import base
from psycopg import pq


class DatabaseWrapper(base.DatabaseWrapper):
    def close_if_health_check_failed(self):
        if self.health_check_enabled and not self.health_check_done and self._idle_and_unread():
            self.health_check_done = True
            return
        super().close_if_health_check_failed()

    def _idle_and_unread(self) -> bool:
        """Whether the connection is open, idle outside a transaction, and
        nothing has arrived on its socket since its last answer."""
        connection = self.connection
        # libpq says UNKNOWN for a connection it knows is closed or broken.
        if connection is None or connection.pgconn.transaction_status != pq.TransactionStatus.IDLE:
            return False
        poller = select.poll()
        poller.register(connection.fileno(), select.POLLIN | select.POLLPRI)
        return not poller.poll(0)
