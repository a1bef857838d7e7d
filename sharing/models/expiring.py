"""Expiring shares: the one path that ends a share by time.

The expiry daemon (its heap, its catch-up, `runexpiry --once`), a file
deletion that finds a share already past its deadline and a reactivation of
such a share all end it here, with one set of side effects:
- the share's row: one conditional UPDATE of the shares still due (active,
  deadline passed: sharing.models.state.due_sql), so a share renewed,
  unshared or expired by another daemon meanwhile is left alone, and the ids
  it RETURNs are exactly the shares this call expired;
- an expired ShareEvent per share, in the same transaction (lateness is the
  commit's stamp minus the deadline), and whatever other apps add to that
  transaction (sharing.models.outboxes: the webhooks outbox's deliveries);
- after the commit, the shares_expired signal with those ids; its receiver in
  sharing.models.removal reaps the ephemeral files of shares that ended.

On PostgreSQL rows locked by another transaction are skipped (FOR UPDATE SKIP
LOCKED), not waited for: several daemons work side by side, and the one that
skipped a row looks again later. The statements are written out: at 10,000
expiries a second the ORM's building of them cost more than running them.
"""

from dataclasses import dataclass
from datetime import datetime
from functools import partial

from django.db import connections

from sharing import backends
from sharing.models.shares import Share
from sharing.models.state import EndReason, Status, due_sql
from sharing.signals import shares_expired


def expire_shares(share_ids: list[int], now: datetime, using: str = "default") -> list[int]:
    """Expire those of `share_ids` still active and due at `now`, stamped
    `now`; return the ids this call expired. Inside a caller's atomic block
    it joins that transaction (its lock held, `now` read under it)."""
    if not share_ids:
        return []
    return _claim(list(share_ids), now, using)


def expire_overdue(now: datetime, limit: int, using: str = "default") -> list[int]:
    """Expire up to `limit` of the shares due at `now`, oldest deadline first,
    straight from the expiry index; return their ids."""
    return _claim(None, now, using, order_limit=limit)


@dataclass(slots=True)
class Expiry:
    """One expiry's UPDATE, in parts, for the backend that sends it
    (sharing.backends): the shares' table (quoted), what it sets, the rule
    of a share still due, and the end's time (as stored: `stamp`)."""

    table: str
    set_expired: str
    set_params: list
    due: str
    due_params: list
    now: datetime
    stamp: str

    def update_sql(self, share_ids: list[int] | None, order_limit: int | None, locking: str = "") -> tuple[str, list]:
        """The UPDATE of `share_ids` still due (None: of those due, up to
        `order_limit`, oldest deadline first), its sub-select ending in
        `locking`; with its parameters."""
        if share_ids is None:
            chosen, chosen_params = self.due, self.due_params
        else:
            chosen = f"id IN ({', '.join(['%s'] * len(share_ids))}) AND {self.due}"
            chosen_params = [*share_ids, *self.due_params]
        tail = f" ORDER BY expires_at, id LIMIT {int(order_limit)}" if order_limit is not None else ""
        # The outer WHERE repeats the condition: the UPDATE itself decides,
        # whatever the sub-select saw.
        sql = (
            f"UPDATE {self.table} {self.set_expired} "
            f"WHERE id IN (SELECT id FROM {self.table} WHERE {chosen}{tail}{locking}) AND {self.due}"
        )
        return sql, [*self.set_params, *chosen_params, *self.due_params]


def _claim(share_ids: list[int] | None, now: datetime, using: str, order_limit: int | None = None) -> list[int]:
    connection = connections[using]
    ops = connection.ops
    stamp = ops.adapt_datetimefield_value(now)
    due, due_params = due_sql(connection, now)
    expiry = Expiry(
        table=ops.quote_name(Share._meta.db_table),
        # updated_at is left alone: it is the last write of an owner or admin,
        # and its index then stays untouched by the daemon (sharing.models.shares).
        set_expired="SET status = %s, end_reason = %s, ended_at = %s",
        set_params=[Status.EXPIRED, EndReason.EXPIRED, stamp],
        due=due,
        due_params=due_params,
        now=now,
        stamp=stamp,
    )
    # Each expiry writes its expired event in the same transaction, from
    # exactly the rows the UPDATE returned: history and state cannot
    # disagree, and a share is expired (and recorded) once.
    rows = backends.for_connection(connection).expire(connection, expiry, share_ids, order_limit)
    expired = [row[0] for row in rows]
    if expired:
        connection.on_commit(partial(shares_expired.send, sender=Share, share_ids=expired, ended_at=now, using=using))
    return expired
