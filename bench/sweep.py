"""A periodic sweep, as cron cleanups do it, as a runnable engine.

    python -m bench.sweep DB [--interval SECONDS]

Every `interval` seconds (fixed rate, like cron) one UPDATE expires every
active share already due, stamping ended_at with the instant the sweep began.
Lateness is therefore spread roughly uniformly between 0 and the interval:
p50 ~ interval / 2, max ~ interval (plus the UPDATE's own time).
"""

import argparse
import contextlib
import signal
import sys
import threading
import time

from bench.db import SHARE_TABLE, connect, format_ts

SWEEP_SQL = (
    f"UPDATE {SHARE_TABLE} SET status = 'expired', end_reason = 'expired', ended_at = ?1, updated_at = ?1 "
    "WHERE status = 'active' AND expires_at <= ?1"
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.sweep", description=__doc__.splitlines()[0])
    parser.add_argument("db", help="SQLite file with the project's schema")
    parser.add_argument("--interval", type=float, default=60.0, help="seconds between sweeps (default 60, as cron)")
    args = parser.parse_args(argv)

    # A signal handler may set an Event: the main thread's wait returns at once.
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    sweeps = expired = 0
    with contextlib.closing(connect(args.db)) as conn:
        next_sweep = time.time()
        while not stop.is_set():
            expired += conn.execute(SWEEP_SQL, (format_ts(time.time()),)).rowcount
            sweeps += 1
            next_sweep += args.interval
            if next_sweep < time.time():  # a sweep overran: skip the missed slots, as cron would
                next_sweep = time.time() + args.interval
            stop.wait(max(0.0, next_sweep - time.time()))
    print(f"sweep: {expired} expired in {sweeps} sweeps", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
