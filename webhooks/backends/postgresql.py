"""PostgreSQL's side of webhooks.backends: rows are claimed under row locks
taken with SKIP LOCKED, so several workers never wait for one another nor
send the same row at once."""

from webhooks.fanout import insert_select

WANTS = "ep.events @> jsonb_build_array(e.kind)"


def outbox_cte(events_cte: str) -> str:
    """A CTE (", webhook_deliveries AS (...)") for a data-modifying WITH that
    inserts the deliveries of the rows `events_cte` inserted (it must return
    id, share_id, kind, at). Part of the same statement, so atomic with it."""
    return f", webhook_deliveries AS ({insert_select(WANTS, events_cte)})"


def claim_pick(cursor, pick: str, params: list) -> str:
    """The pick, taking its row FOR UPDATE SKIP LOCKED: one another worker
    holds is passed over, not waited for."""
    return pick + " FOR UPDATE OF d SKIP LOCKED"


def idle_mark(connection) -> None:
    """None: no cheap sign here tells that nothing was committed since a look."""


def unchanged_since(connection, mark) -> bool:
    return False
