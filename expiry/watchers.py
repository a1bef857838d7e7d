"""How the daemon learns that another process wrote shares since it looked.

A share created or renewed after the daemon's last refresh may expire before
the next one; the daemon must pick it up without re-reading the whole window.
A watcher answers one cheap question, "did anything change?", and only then
does the daemon read the rows written since its last look. The PostgreSQL
watcher goes further: NOTIFY payloads carry the share and its deadline, so
they are scheduled without any read at all.

The scheduler calls, from the daemon thread only:
  changed()            at a due pick-up check: read the rows written since?
  pickup_interval(d)   seconds until the next check, given the configured d
  wants_pickup         check now, whatever the interval (e.g. after a reconnect)
  take_notices()       [(share_id, expires_at), ...] received since the last call
and the daemon calls start(wake) / stop() around its loop.
"""

import contextlib
import logging
import os
import queue
import select
import socket
import threading

from django.db import connections

from expiry.notify import CHANNEL, PICKUP, parse_payload, send_datagram, wakeup_socket_path
from expiry.wal_watch import WalWatch

logger = logging.getLogger("expiry")


class Watcher:
    """Nothing to start, no notices, a pick-up check every interval."""

    wants_pickup = False
    # Called (from the daemon thread) when another process is seen to have
    # written: the webhook thread looks for new deliveries then, instead of
    # polling on its own (expiry.service wires it).
    on_change = None
    # Whether changed() sees every commit of another connection (and so
    # calls on_change for each, at the latest one pick-up interval later).
    sees_other_writers = False

    def start(self, wake: threading.Event) -> None:
        pass

    def stop(self) -> None:
        pass

    def changed(self) -> bool:
        return True

    def pickup_interval(self, default: float) -> float:
        return default

    def take_notices(self) -> list[tuple[int, float]]:
        return []


class DataVersionWatcher(Watcher):
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
        connection.ensure_connection()
        # The raw connection: 8 us a poll instead of 37 us through Django's cursor.
        version = connection.connection.execute("PRAGMA data_version").fetchone()[0]
        # data_version is per connection: after a reconnect the number means
        # something else, so a new connection counts as a change.
        key = (id(connection.connection), version)
        changed = key != self._last
        self._last = key
        return changed


class PollingWatcher(Watcher):
    """Say "changed" at every check: the fallback where nothing cheaper exists."""


# While notices arrive, how often a daemon still looks for rows written without
# one (other programs, a lost notice). On PostgreSQL an idle daemon wakes for
# this look, and a row lease (--lease on) is renewed on it (ttl/2 = 2.5 s, up
# to 1 s early). On SQLite it looks only when the database was written, at
# most this often (expiry/wal_watch.py); its lease is a lock.
SAFETY_INTERVAL = 2.0
# SQLite, with writes watched: a look this often all the same, for a write no
# event announced (none is known; the daemon wakes every MAX_WAIT anyway).
WATCHED_INTERVAL = 60.0

# Markers the listener thread puts in the queue between notices.
UP, DOWN = "up", "down"


class NotifyWatcher(Watcher):
    """LISTEN on PostgreSQL through a dedicated connection in its own thread.

    While the listener is connected, notices are scheduled as they arrive
    (NOTIFY to wake-up p50 ~0.15 ms) and the pick-up read runs only every
    `safety_interval`, for writers that send no NOTIFY (bulk loads, a failed
    NOTIFY). While it is not (before the first connect, after a drop) the
    watcher falls back to polling: a pick-up read every pick-up interval.
    Each (re)connection triggers one pick-up read at once, for what was
    written while nobody listened.
    """

    def __init__(
        self,
        using: str = "default",
        *,
        channel: str = CHANNEL,
        safety_interval: float = SAFETY_INTERVAL,
        conninfo: str | None = None,
    ):
        self.using = using
        self.conninfo = conninfo  # default: the database behind `using`
        self.channel = channel
        self.safety_interval = safety_interval
        self.queue: queue.Queue = queue.Queue()
        self.listening = False
        self.wants_pickup = True
        self.listener: NotifyListener | None = None

    def start(self, wake: threading.Event) -> None:
        if self.listener is None:
            self.listener = self.make_listener(wake)
            self.listener.start()

    def make_listener(self, wake: threading.Event) -> threading.Thread:
        conninfo = self.conninfo or conninfo_for(self.using)
        return NotifyListener(conninfo, self.channel, self.queue, wake)

    def stop(self) -> None:
        listener, self.listener = self.listener, None
        if listener is not None:
            listener.stop()
            listener.join(2)
        self.take_notices()
        self.listening = False

    def changed(self) -> bool:
        self.wants_pickup = False
        return True

    def pickup_interval(self, default: float) -> float:
        return max(default, self.safety_interval) if self.listening else default

    def take_notices(self) -> list[tuple[int, float]]:
        notices = []
        while True:
            try:
                item = self.queue.get_nowait()
            except queue.Empty:
                if notices and self.on_change is not None:
                    self.on_change()  # a share created or renewed has events
                return notices
            if item in (UP, DOWN):
                self.listening = item == UP
                self.wants_pickup = True
            elif item == PICKUP:
                self.wants_pickup = True
            else:
                notices.append(item)


# libpq connection options Django's PostgreSQL backend reads itself.
DJANGO_ONLY_OPTIONS = {
    "isolation_level",
    "server_side_binding",
    "prepare_threshold",
    "pool",
    "assume_role",
    "cursor_factory",
}
RECONNECT_MAX = 5.0


def conninfo_for(using: str) -> str:
    """A libpq connection string for the database behind `using`."""
    from psycopg.conninfo import make_conninfo

    cfg = connections[using].settings_dict
    params = {"dbname": cfg["NAME"], "user": cfg["USER"], "password": cfg["PASSWORD"]}
    params |= {"host": cfg["HOST"], "port": str(cfg["PORT"] or "")}
    params |= {key: value for key, value in cfg["OPTIONS"].items() if key not in DJANGO_ONLY_OPTIONS}
    params = {key: value for key, value in params.items() if value not in (None, "")}
    # Keepalives notice a silently dead peer within ~25 s, not hours.
    params |= {"application_name": "runexpiry-listen", "connect_timeout": 5}
    params |= {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3}
    return make_conninfo(**params)


class NotifyListener(threading.Thread):
    """Hold a LISTEN connection; push notices and UP/DOWN into `queue` and set
    `wake` so the daemon thread, which owns the scheduler, handles them."""

    def __init__(self, conninfo: str, channel: str, notices: queue.Queue, wake: threading.Event):
        super().__init__(name="runexpiry-listen", daemon=True)
        self.conninfo = conninfo
        self.channel = channel
        self.notices = notices
        self.wake = wake
        self.stopping = threading.Event()
        # stop() writes to one end; the listening select() also waits on the
        # other, so it needs no timeout (sockets, not a pipe's bare fds: one
        # closed at the end of run() makes a late stop() fail, not write to a
        # reused descriptor).
        self._stop_reader, self._stop_writer = socket.socketpair()
        self.failures = 0  # in a row
        self.connections = 0  # successful LISTENs in all

    def stop(self) -> None:
        self.stopping.set()
        with contextlib.suppress(OSError):  # closed: the thread has ended
            self._stop_writer.send(b"\0")

    def run(self) -> None:
        try:
            while not self.stopping.is_set():
                try:
                    self.listen()
                except Exception:
                    self.failures += 1
                    delay = min(0.1 * 2 ** (self.failures - 1), RECONNECT_MAX)
                    logger.warning(
                        "LISTEN connection failed; polling instead, reconnecting in %.1f s", delay, exc_info=True
                    )
                    self.push(DOWN)
                    self.stopping.wait(delay)
        finally:
            self._stop_writer.close()
            self._stop_reader.close()

    def listen(self) -> None:
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
            self.failures = 0
            self.connections += 1
            logger.info("listening for schedule changes on %s", self.channel)
            self.push(UP)
            self.take(conn)  # any that came with the LISTEN's reply
            while not self.stopping.is_set():
                # No timeout, so no idle wake-ups: the connection's socket turns
                # readable with a notice (or a dead peer, seen by the keepalives),
                # the stop socket with stop(). psycopg's own wait in notifies()
                # would wake every 0.1 s.
                ready, _, _ = select.select([conn.fileno(), self._stop_reader], [], [])
                if conn.fileno() in ready:
                    self.take(conn)

    def take(self, conn) -> None:
        """Queue the notices the connection holds or has ready, without waiting."""
        for notify in conn.notifies(timeout=0):
            try:
                self.notices.put(parse_payload(notify.payload))
            except ValueError:
                logger.warning("ignored a malformed notice %r", notify.payload[:80])
            self.wake.set()

    def push(self, marker: str) -> None:
        self.notices.put(marker)
        self.wake.set()


class DatagramWatcher(NotifyWatcher):
    """SQLite on one machine: notices arrive as datagrams on a UNIX socket.

    Web processes send `id:deadline` to the socket after each commit that
    creates or renews a share (expiry.notify). While this watcher is bound to
    it, the daemon wakes only for deadlines and notices (a notice reaches it
    in well under a millisecond) and checks `PRAGMA data_version` for
    writers that send no notice (other programs, a dropped datagram): when
    the database was written, at most once every `safety_interval`
    (WalWatch), or every `safety_interval` where writes cannot be watched.
    Until it is bound, or when binding fails, it polls data_version every
    pick-up interval like DataVersionWatcher.
    """

    sees_other_writers = True  # PRAGMA data_version

    def __init__(self, using: str = "default", *, safety_interval: float = SAFETY_INTERVAL, path: str | None = None):
        super().__init__(using, safety_interval=safety_interval)
        self.path = path or wakeup_socket_path(using)
        self.versions = DataVersionWatcher(using)
        self.writes: WalWatch | None = None

    def start(self, wake: threading.Event) -> None:
        if self.path is None:
            return
        super().start(wake)
        if self.writes is None:
            self.writes = WalWatch(
                connections[self.using].settings_dict["NAME"],
                lambda: self.push_pickup(wake),
                pause=self.safety_interval,
            )
            self.writes.start()

    def stop(self) -> None:
        writes, self.writes = self.writes, None
        if writes is not None:
            writes.stop()
            writes.join(2)
        super().stop()

    def push_pickup(self, wake: threading.Event) -> None:
        self.queue.put(PICKUP)
        wake.set()

    def pickup_interval(self, default: float) -> float:
        writes = self.writes
        if self.listening and writes is not None and writes.watching:
            return max(default, WATCHED_INTERVAL)
        return super().pickup_interval(default)

    def make_listener(self, wake: threading.Event) -> threading.Thread:
        return DatagramListener(self.path, self.queue, wake)

    def changed(self) -> bool:
        self.wants_pickup = False
        changed = self.versions.changed()
        if changed and self.on_change is not None:
            self.on_change()
        return changed


class DatagramListener(threading.Thread):
    """Own the socket: bind it, push notices and UP/DOWN into `queue`, and set
    `wake` so the daemon thread, which owns the scheduler, handles them."""

    def __init__(self, path: str, notices: queue.Queue, wake: threading.Event):
        super().__init__(name="runexpiry-wakeup", daemon=True)
        self.path = path
        self.notices = notices
        self.wake = wake
        self.stopping = threading.Event()
        self.sock: socket.socket | None = None

    def stop(self) -> None:
        self.stopping.set()
        send_datagram(self.path, "")  # wake the blocking recv() now
        sock = self.sock
        if sock is not None:
            # And should that datagram be lost (a full queue, the path taken
            # over): a shut-down socket's recv() returns at once.
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def run(self) -> None:
        try:
            sock, inode = self.bind()
            self.sock = sock
        except OSError:
            logger.warning("cannot listen on %s; polling for changes instead", self.path, exc_info=True)
            self.push(DOWN)
            return
        try:
            logger.info("listening for schedule changes on %s", self.path)
            self.push(UP)
            while not self.stopping.is_set():
                data = sock.recv(256)
                if not data:
                    continue  # stop()'s wake-up
                try:
                    self.notices.put(parse_payload(data.decode()))
                except ValueError:
                    logger.warning("ignored a malformed notice %r", data[:80])
                self.wake.set()
        finally:
            sock.close()
            self.unlink_if_ours(inode)
            self.push(DOWN)

    def bind(self) -> tuple[socket.socket, int]:
        # A socket file left by a daemon that was killed refuses bind();
        # only the lease holder listens, so the file is not in use.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            # Owner only: whoever may send to the socket may inject deadlines.
            # The umask covers the instant between bind() and chmod().
            umask = os.umask(0o177)
            try:
                sock.bind(self.path)
            finally:
                os.umask(umask)
            os.chmod(self.path, 0o600)
            # No timeout: idle costs no wake-ups. stop() wakes recv() with an
            # empty datagram and by shutting the socket down.
            return sock, os.stat(self.path).st_ino
        except OSError:
            sock.close()
            raise

    def unlink_if_ours(self, inode: int) -> None:
        # A new lease holder may have bound the path again meanwhile.
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == inode:
                os.unlink(self.path)

    def push(self, marker: str) -> None:
        self.notices.put(marker)
        self.wake.set()


def watcher_for(using: str = "default") -> Watcher:
    vendor = connections[using].vendor
    if vendor == "sqlite":
        return DatagramWatcher(using)
    if vendor == "postgresql":
        return NotifyWatcher(using)
    return PollingWatcher()
