"""WAL checkpoints for SQLite, off the daemon's time-critical path.

In WAL mode with synchronous=NORMAL a commit does not fsync; a checkpoint
(copying the WAL back into the database file) does, twice. By default the
commit that crosses 1000 WAL pages runs it, which put 4-12 ms stalls into the
daemon's expiries (96 of the 100 latest shares in a traced benchmark run had
one between their deadline and their expiry). The daemon's connection turns
automatic checkpoints off (ShareStore._tune) and this thread checkpoints from
a connection of its own instead: PASSIVE, so it never blocks a writer or a
reader, and the sqlite3 module releases the GIL while it runs.

While the daemon writes without a pause (thousands of expiries a second) a
PASSIVE checkpoint never finds the WAL fully copied, so the WAL grows until
the writes pause; the first commit after a complete checkpoint starts it
over. A RESTART checkpoint would start it over at once, but it holds the
write lock while it finishes, and that held the daemon's expiries 8-20 ms.
"""

import logging
import sqlite3
import threading

from django.db import connections

from sharing.signals import shares_expired

logger = logging.getLogger("expiry")

# Checkpoint every 0.1 s while the daemon is expiring shares, and every five
# minutes otherwise, for its other writes (reminder claims, purges, uploads
# removed); an idle daemon writes nothing (its lease is a lock). Small and
# often: a checkpoint's fsync held up the daemon's next appends to the WAL
# (the file system's journal), by more the more it had to write; once a
# second, every second at 10,000 expiries a second was 10-25 ms late, every
# 0.1 s the p99 lateness is ~2 ms (docs/benchmarks.md, "Checkpoints small
# and often").
BUSY_INTERVAL = 0.1
IDLE_INTERVAL = 300.0


class WalCheckpointer(threading.Thread):
    def __init__(self, path: str, *, busy_interval: float = BUSY_INTERVAL, idle_interval: float = IDLE_INTERVAL):
        super().__init__(name="runexpiry-checkpoint", daemon=True)
        self.path = path
        self.busy_interval = busy_interval
        self.idle_interval = idle_interval
        self.stopping = threading.Event()
        self.wrote = threading.Event()
        self.checkpoints = 0

    @classmethod
    def for_database(cls, using: str = "default") -> "WalCheckpointer | None":
        connection = connections[using]
        if connection.vendor != "sqlite" or connection.is_in_memory_db():
            return None
        return cls(str(connection.settings_dict["NAME"]))

    def start(self) -> None:
        shares_expired.connect(self.note_write, dispatch_uid=f"checkpoint-{id(self)}")
        super().start()

    def stop(self) -> None:
        shares_expired.disconnect(dispatch_uid=f"checkpoint-{id(self)}")
        self.stopping.set()
        self.wrote.set()

    def note_write(self, **kwargs) -> None:
        self.wrote.set()

    def run(self) -> None:
        db = None
        try:
            while not self.stopping.is_set():
                self.wrote.wait(self.idle_interval)
                self.wrote.clear()
                if self.stopping.wait(self.busy_interval):  # let a second of writes gather
                    break
                db = self.checkpoint(db)
        finally:
            if db is not None:
                db.close()

    def checkpoint(self, db: sqlite3.Connection | None) -> sqlite3.Connection | None:
        try:
            if db is None:
                db = sqlite3.connect(self.path, timeout=1, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            self.checkpoints += 1
        except sqlite3.Error:
            # Busy or gone for a moment: the next round tries again, and the
            # web server's own connections still checkpoint as they write.
            logger.debug("WAL checkpoint failed; trying again later", exc_info=True)
            if db is not None:
                db.close()
            db = None
        return db
