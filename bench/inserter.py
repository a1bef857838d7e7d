"""Another process creating shares while an engine runs, like the app does.

    python -m bench.inserter DB --owner-id ID [--count N] [--over S] [--due-after S]

Each share is its own transaction: BEGIN IMMEDIATE, then `now` read while
holding the write lock (so updated_at grows in commit order, as in
Share.create_for), created_at = updated_at = now, expires_at = now +
due_after, COMMIT; then, as the app does after the commit, a notice to the
daemon's wake-up socket (expiry.notify; ignored by the other engines, and
lost without error when nobody listens). Inserts are paced evenly over
`over` seconds.
"""

import argparse
import contextlib
import secrets
import sys
import time

from bench.db import INSERT_SHARE_SQL, connect, to_us
from expiry.notify import payload_for, send_datagram


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.inserter", description=__doc__.splitlines()[0])
    parser.add_argument("db")
    parser.add_argument("--owner-id", type=int, required=True)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--over", type=float, default=2.0, help="seconds to spread the inserts over")
    parser.add_argument("--due-after", type=float, default=0.2, help="each share's lifetime in seconds")
    args = parser.parse_args(argv)

    with contextlib.closing(connect(args.db)) as conn:
        start = time.time()
        for i in range(args.count):
            pause = start + i * args.over / args.count - time.time()
            if pause > 0:
                time.sleep(pause)
            conn.execute("BEGIN IMMEDIATE")
            now = time.time()
            expires_us = to_us(now + args.due_after)
            inserted = conn.execute(
                INSERT_SHARE_SQL, (secrets.token_urlsafe(32), to_us(now), expires_us, args.owner_id)
            )
            conn.execute("COMMIT")
            send_datagram(f"{args.db}.wakeup", payload_for(inserted.lastrowid, expires_us / 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main())
