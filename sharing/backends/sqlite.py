"""SQLite's side of sharing.backends.

Statements on the download and expiry paths go to the raw sqlite3
connection: Django's cursor wrappers (their placeholder rewrite, their
hooks) cost more CPU than the short statements themselves.
"""

import contextlib


@contextlib.contextmanager
def plain_cursor(connection):
    """The raw connection's cursor (`.raw`), taking the same "%s"
    placeholders, its errors still django.db's: the share lookup took
    121 us through Django's cursor and 46 us without. Its statements are
    not in Django's query log (CaptureQueriesContext)."""
    connection.ensure_connection()
    with connection.wrap_database_errors:
        yield _PlainCursor(connection.connection)


class _PlainCursor:
    __slots__ = ("_result", "raw")

    def __init__(self, raw):
        self.raw = raw
        self._result = None

    def execute(self, sql: str, params=()) -> None:
        self._result = self.raw.execute(sql.replace("%s", "?"), params)

    def fetchone(self):
        return self._result.fetchone()

    def fetchall(self):
        return self._result.fetchall()
