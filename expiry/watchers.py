"""How the daemon learns that another process wrote shares since it looked.

A share created or renewed after the daemon's last refresh may expire before
the next one; the daemon must pick it up without re-reading the whole window.
A watcher answers one cheap question, "did anything change?", and only then
does the daemon read the rows written since its last look.
"""

from django.db import connections


class DataVersionWatcher:
    """Watch SQLite's `PRAGMA data_version` on the daemon's connection.

    The value changes only when ANOTHER connection commits (the daemon's own
    expiries do not wake it), and reading it costs ~2 us, so polling it every
    EXPIRY_PICKUP_INTERVAL (50 ms by default) costs 20 wake-ups a second and a
    pick-up delay of at most that interval plus one indexed query.
    """

    def __init__(self, using: str = "default"):
        self.using = using
        self._last = None

    def changed(self) -> bool:
        connection = connections[self.using]
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA data_version")
            version = cursor.fetchone()[0]
        # data_version is per connection: after a reconnect the number means
        # something else, so a new connection counts as a change.
        key = (id(connection.connection), version)
        changed = key != self._last
        self._last = key
        return changed


class PollingWatcher:
    """Say "changed" at every check: the fallback where nothing cheaper exists."""

    def changed(self) -> bool:
        return True


def watcher_for(using: str = "default"):
    if connections[using].vendor == "sqlite":
        return DataVersionWatcher(using)
    return PollingWatcher()
