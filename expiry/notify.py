"""Tell the expiry daemons about new and renewed shares, as they commit.

PostgreSQL: NOTIFY on CHANNEL. SQLite (one machine): a datagram to a UNIX
socket next to the database file, which the daemon holding the lease listens
on (expiry.watchers.DatagramWatcher): the daemon then sleeps until a deadline
or a notice instead of polling for changes 20 times a second.

share_schedule_changed is sent after the write has committed, so the NOTIFY
is its own tiny autocommit statement and never lengthens a hot write
transaction (a NOTIFY inside one halves its throughput, as measured when
the design was chosen). Every daemon LISTENs on CHANNEL
(expiry.watchers.NotifyWatcher).

Notifications are an optimisation, not the source of truth: one lost (the
daemon was reconnecting, or the NOTIFY failed) is caught by the daemon's
pick-up read of rows written since its last look, and a link is never served
after its deadline whatever the daemon knows (access-time check).
"""

import atexit
import logging
import math
import socket

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections

logger = logging.getLogger("expiry")

# Channels are per database, so test runs on separate databases never mix.
CHANNEL = "microcloud_share_schedule"


# A notice without a deadline: "read what was written, now". Resumable
# uploads send it when one is created (they have no change mark the
# pick-up could read from), so a short Upload-Expires is scheduled at once.
PICKUP = "pickup"


def payload_for(share_id: int, expires_at: float) -> str:
    # repr() of a float round-trips exactly, so the daemon's deadline equals
    # the one it would read from the row.
    return f"{share_id}:{expires_at!r}"


# Share ids are BigAutoField values; anything outside can only be hostile, and
# would make the daemon's UPDATE overflow (and fail the batch it joins).
MAX_SHARE_ID = 2**63 - 1
# Deadlines a datetime can hold (before year 10000): NaN or inf at the heap
# head would never fall due and stall every share behind it.
MAX_DEADLINE = 253402300799.0


def valid_deadline(share_id: int, expires_at: float) -> bool:
    """Whether (share_id, expires_at) could describe a real share."""
    return 1 <= share_id <= MAX_SHARE_ID and math.isfinite(expires_at) and 0 <= expires_at <= MAX_DEADLINE


def parse_payload(payload: str) -> tuple[int, float] | str:
    """Return (share_id, expires_at) from a payload, or PICKUP; raise
    ValueError if it is malformed or names something no share can be (anyone
    who can reach the socket, or CONNECT to the database, can send one)."""
    if payload == PICKUP:
        return PICKUP
    share_id_text, separator, expires_text = payload.partition(":")
    if not separator or not share_id_text.isascii() or not share_id_text.isdigit():
        raise ValueError(f"not a share id: {share_id_text[:40]!r}")
    share_id, expires_at = int(share_id_text), float(expires_text)
    if not valid_deadline(share_id, expires_at):
        raise ValueError(f"out of range: {payload[:80]!r}")
    return share_id, expires_at


# AF_UNIX socket paths are limited to 107 bytes on Linux.
MAX_SOCKET_PATH = 107


def wakeup_socket_path(using: str = DEFAULT_DB_ALIAS) -> str | None:
    """Where the SQLite daemon listens for notices, or None (no socket)."""
    connection = connections[using]
    if connection.vendor != "sqlite" or connection.is_in_memory_db():
        return None
    path = settings.EXPIRY_WAKEUP_SOCKET or f"{connection.settings_dict['NAME']}.wakeup"
    return path if len(str(path).encode()) <= MAX_SOCKET_PATH else None


_sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
_sender.setblocking(False)  # never hold up a request: a full queue drops the notice
atexit.register(_sender.close)


def send_datagram(path: str, payload: str) -> bool:
    try:
        _sender.sendto(payload.encode(), path)
    except OSError:
        # No daemon listening (no socket file, nobody bound) or its queue is
        # full: the daemon's safety poll of data_version finds the row.
        return False
    return True


def notify_daemons(sender, share_id, expires_at, using=DEFAULT_DB_ALIAS, **kwargs):
    """Announce a new or renewed deadline to the daemons: the receiver of
    share_schedule_changed, connected in ExpiryConfig.ready()."""
    announce(payload_for(share_id, expires_at.timestamp()), using)


def ask_for_pickup(using=DEFAULT_DB_ALIAS) -> None:
    """Ask the daemons to read what was written now (after the commit)."""
    announce(PICKUP, using)


def announce(payload: str, using=DEFAULT_DB_ALIAS) -> None:
    connection = connections[using]
    if connection.vendor == "sqlite":
        path = wakeup_socket_path(using)
        if path is not None:
            send_datagram(path, payload)
        return
    if connection.vendor != "postgresql":
        return
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, %s)", [CHANNEL, payload])
    except DatabaseError:
        # The write has committed; failing the request now would only make
        # the client retry a success. The daemons' pick-up read finds it.
        logger.warning("NOTIFY %r failed", payload, exc_info=True)
