"""A share's state: its statuses, the one rule that says whether it may be
served at a moment, what has happened to it, and the time that decides.

The rule is written here once, in the three forms the code needs: a Q for
ORM queries, an SQL fragment for the statements written out on hot paths,
and a Python check for an instance in hand. They are built from the same
parts (RULE_PARTS), so a change to the rule (a share that starts later, a
paused share) is made here and nowhere else. Every other module asks.

A share is *servable* at `now` while it is active and its deadline is after
`now`. An active share whose deadline has passed has ended by time even
before the expiry daemon records it (it is *due*): access is always checked
against the clock, never against the daemon's progress.
"""

from dataclasses import dataclass
from datetime import datetime

from django.db import connections, models
from django.db.models import Q
from django.utils import timezone


class Status(models.TextChoices):
    ACTIVE = "active"
    EXPIRED = "expired"
    UNSHARED = "unshared"


class EndReason(models.TextChoices):
    EXPIRED = "expired"
    DOWNLOAD_LIMIT = "download_limit", "download limit reached"
    UNSHARED = "unshared"
    FILE_DELETED = "file_deleted", "file deleted"
    # A file of the share was found infected by its scan (scanning/).
    INFECTED = "infected", "malware found"


# The rule's parts: a share is servable while `status` is ACTIVE and
# `expires_at` is after the moment asked about (strictly: at its deadline to
# the microsecond a link no longer works).
STATUS_FIELD, DEADLINE_FIELD = "status", "expires_at"


def servable_q(now: datetime, prefix: str = "") -> Q:
    """The rule as a Q; `prefix` reaches a share through a relation ("share_items__share__")."""
    return Q(**{f"{prefix}{STATUS_FIELD}": Status.ACTIVE, f"{prefix}{DEADLINE_FIELD}__gt": now})


def due_q(now: datetime, prefix: str = "") -> Q:
    """Active but past its deadline at `now`: ended by time, not yet recorded."""
    return Q(**{f"{prefix}{STATUS_FIELD}": Status.ACTIVE, f"{prefix}{DEADLINE_FIELD}__lte": now})


def servable_sql(connection, now: datetime, table: str = "") -> tuple[str, list]:
    """The rule as an SQL condition and its parameters, for statements
    written out (`table`: a qualifier such as "s" when the query joins).

    The status is written into the SQL (a constant of ours, never input), so
    a planner can match the partial indexes' WHERE status = 'active'."""
    column = f"{table}." if table else ""
    stamp = connection.ops.adapt_datetimefield_value(now)
    return f"{column}{STATUS_FIELD} = '{Status.ACTIVE}' AND {column}{DEADLINE_FIELD} > %s", [stamp]


def sendable_q(now: datetime) -> Q:
    """sendable_sql as a Q: what an unshare must end so no byte goes out."""
    ended_by_limit = Q(**{STATUS_FIELD: Status.EXPIRED, "end_reason": EndReason.DOWNLOAD_LIMIT})
    return (servable_q(now) | ended_by_limit) & Q(**{f"{DEADLINE_FIELD}__gt": now})


def sendable_sql(connection, now: datetime) -> tuple[str, list]:
    """May the share send bytes at `now`: servable, or ended by its download
    limit with its deadline still ahead (a download started before the end
    may be finished while the byte budget holds its bytes; the budget is the
    download statement's other condition). Unshared, deleted or past its
    deadline: never."""
    stamp = connection.ops.adapt_datetimefield_value(now)
    ended_by_limit = f"{STATUS_FIELD} = '{Status.EXPIRED}' AND end_reason = '{EndReason.DOWNLOAD_LIMIT}'"
    return f"({STATUS_FIELD} = '{Status.ACTIVE}' OR {ended_by_limit}) AND {DEADLINE_FIELD} > %s", [stamp]


def due_sql(connection, now: datetime) -> tuple[str, list]:
    """due_q as an SQL condition and its parameters (the expiry's statements).

    Here the status is bound, not written: with 'active' written in, SQLite
    also weighed the partial expiry index for each chunk of ids, and a
    burst's slowest chunk took ~2 ms longer (docs/benchmarks.md, "Bursts and their stamps")."""
    stamp = connection.ops.adapt_datetimefield_value(now)
    return f"{STATUS_FIELD} = %s AND {DEADLINE_FIELD} <= %s", [Status.ACTIVE, stamp]


def is_servable(status: str, expires_at: datetime, now: datetime) -> bool:
    """The rule for values in hand (a share instance's)."""
    return status == Status.ACTIVE and expires_at > now


class EndState(models.TextChoices):
    """What has happened to a share, as everyone who reads it is told."""

    LIVE = "live"
    EXPIRED = "expired", "expired by time"
    DOWNLOAD_LIMIT = "download_limit", "ended by its download limit"
    UNSHARED = "unshared"
    FILE_DELETED = "file_deleted", "file deleted"
    INFECTED = "infected", "malware found"


# The status a client of the API reads for each end state.
STATUS_OF = {
    EndState.LIVE: Status.ACTIVE,
    EndState.EXPIRED: Status.EXPIRED,
    EndState.DOWNLOAD_LIMIT: Status.EXPIRED,
    EndState.UNSHARED: Status.UNSHARED,
    EndState.FILE_DELETED: Status.UNSHARED,
    EndState.INFECTED: Status.UNSHARED,
}
_STATE_OF_REASON = {
    EndReason.EXPIRED: EndState.EXPIRED,
    EndReason.DOWNLOAD_LIMIT: EndState.DOWNLOAD_LIMIT,
    EndReason.UNSHARED: EndState.UNSHARED,
    EndReason.FILE_DELETED: EndState.FILE_DELETED,
    EndReason.INFECTED: EndState.INFECTED,
}


@dataclass(frozen=True)
class Fate:
    """What has happened to a share at a moment, and since when (None while live)."""

    state: EndState
    since: datetime | None

    @property
    def live(self) -> bool:
        return self.state == EndState.LIVE

    @property
    def status(self) -> str:
        return STATUS_OF[self.state]


def fate_of(*, status, end_reason, ended_at, expires_at, has_file: bool, now: datetime, used_up: bool = False) -> Fate:
    """The one mapping from a share's columns (and the clock) to its fate.

    What ended a share is its end reason; an active share past its deadline
    ended by time at its deadline (the daemon has not recorded it yet). A live
    share whose file row is gone (deleted without ending its shares) can
    serve nothing: it reads as file deleted. A live share whose byte budget
    is used up (`used_up`, sharing.models.budget) has reached
    its download limit even before the last of its responses settles and
    records the end. Reactivation makes a share active again, so a
    reactivated share is live until it ends anew."""
    if status != Status.ACTIVE:
        return Fate(_STATE_OF_REASON[end_reason], ended_at)
    if not is_servable(status, expires_at, now):
        return Fate(EndState.EXPIRED, expires_at)
    if not has_file:
        return Fate(EndState.FILE_DELETED, None)
    if used_up:
        return Fate(EndState.DOWNLOAD_LIMIT, None)
    return Fate(EndState.LIVE, None)


def locked_now(shares: models.QuerySet) -> datetime:
    """Lock `shares`' rows, then return the time: the time that decides.

    Call inside transaction.atomic(). On SQLite the IMMEDIATE transaction
    already holds the database's write lock; on PostgreSQL the rows are locked
    here (FOR NO KEY UPDATE, which waits for another writer). A clock read
    before such a wait would judge a download, renewal or unshare by a time
    that had passed by the time the UPDATE ran.
    """
    if connections[shares.db].features.has_select_for_update:
        list(shares.select_for_update(no_key=True).order_by("pk").values_list("pk", flat=True))
    return timezone.now()
