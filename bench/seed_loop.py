"""The reference "seed-style loop" (described in docs/expiry.md), as a runnable engine.

    python -m bench.seed_loop DB [--interval SECONDS]

Written to be faithful, flaws included, so the benchmark shows what they
cost. Only the heap-head bug is corrected (it checks heap[0], not the last
list slot). Kept on purpose:
- a 1 ms sleep loop that wakes ~1000 times a second, busy or not;
- at most one share popped per tick;
- each refresh pushes every row of the window again (duplicates);
- shares created after a refresh are not seen until the next refresh;
- re-read, then unshare, as two statements with a commit per share (a race
  window); a "database is locked" error drops the entry; any other error ends
  the loop.
"Unshare" here writes the expired state our schema requires (status
'expired', end_reason 'expired', ended_at = when it wrote), so lateness is
read from the database exactly as for the other engines.
"""

import argparse
import contextlib
import heapq
import signal
import sys
import time

from bench.db import DAY, SHARE_TABLE, connect, format_ts, parse_ts

DEFAULT_LIFETIME_S = 7 * DAY  # SharingPolicy.default_lifetime when no policy row exists

WINDOW_SQL = f"SELECT expires_at, id FROM {SHARE_TABLE} WHERE status = 'active' AND expires_at < ?"
REREAD_SQL = f"SELECT id FROM {SHARE_TABLE} WHERE id = ? AND status = 'active'"
# No status or deadline condition: the reference trusted its re-read.
UNSHARE_SQL = (
    f"UPDATE {SHARE_TABLE} SET status = 'expired', end_reason = 'expired', ended_at = ?, updated_at = ? WHERE id = ?"
)


def reference_interval(lifetime_s: float) -> float:
    """The reference rule: 1 day when shares live a day or more, else a tenth
    of their lifetime."""
    return DAY if lifetime_s >= DAY else lifetime_s / 10


def policy_lifetime(conn) -> float:
    # DurationField is stored as whole microseconds on SQLite.
    row = conn.execute("SELECT default_lifetime FROM sharing_sharingpolicy WHERE id = 1").fetchone()
    return row[0] / 1e6 if row else DEFAULT_LIFETIME_S


class SeedLoop:
    def __init__(self, conn, interval: float):
        self.conn = conn
        self.interval = interval
        self.heap: list[tuple[float, int]] = []
        self.next_refresh = time.time()
        self.stopping = False
        self.expired = self.dropped = self.refreshes = 0

    def run(self) -> None:
        while not self.stopping:
            now = time.time()
            if now >= self.next_refresh:
                self.refresh(now)
            elif self.heap and self.heap[0][0] < now:
                self.expire_one()
            time.sleep(0.001)

    def refresh(self, now: float) -> None:
        self.next_refresh = now + self.interval
        for expires_at, share_id in self.conn.execute(WINDOW_SQL, (format_ts(self.next_refresh),)):
            heapq.heappush(self.heap, (parse_ts(expires_at), share_id))
        self.refreshes += 1

    def expire_one(self) -> None:
        _, share_id = heapq.heappop(self.heap)
        try:
            if self.conn.execute(REREAD_SQL, (share_id,)).fetchone() is None:
                return  # already gone (or a duplicate entry already done)
            stamp = format_ts(time.time())
            self.conn.execute(UNSHARE_SQL, (stamp, stamp, share_id))
            self.expired += 1
        except Exception as exc:
            if "locked" not in str(exc):
                raise
            self.dropped += 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.seed_loop", description=__doc__.splitlines()[0])
    parser.add_argument("db", help="SQLite file with the project's schema")
    parser.add_argument("--interval", type=float, help="refresh interval in seconds (default: the reference rule)")
    args = parser.parse_args(argv)
    with contextlib.closing(connect(args.db)) as conn:
        loop = SeedLoop(conn, args.interval or reference_interval(policy_lifetime(conn)))

        def stop(*_):
            loop.stopping = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        loop.run()
    print(f"seed loop: {loop.expired} expired, {loop.dropped} dropped, {loop.refreshes} refreshes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
