"""CPU per expiry of the daemon's own work, independent of machine load.

    python -m bench.cost_probe [--shares 30000] [--seconds 3] [--coalesce 0.0005 ...] [--ordered]

The rate scenario's lateness and CPU depend on how busy the machine is: a
daemon that falls behind expires bigger batches, which cost less per share.
This probe runs the real scheduler, store, housekeeper and WAL checkpointer
in-process on a scratch database filled like the rate scenario, with a fake
clock that jumps to each next deadline (perfect waits, no sleeping): the
batches are those of a daemon that keeps up, and the figure is the CPU time
its thread spent per expiry. Deterministic batching, so good for comparing
changes and slack settings on a shared machine; not a lateness measurement.
Prints one line per --coalesce value (JSON with --json).
"""

import argparse
import json
import random
import sys
import time
from pathlib import Path


def measure(template: Path, coalesce: float) -> dict:
    """Expire every share of a copy of `template` with slack `coalesce`."""
    from datetime import UTC, datetime

    from django.conf import settings
    from django.db import connection

    from bench.in_process import fresh_copy
    from expiry.checkpoint import WalCheckpointer
    from expiry.housekeeping import Housekeeper
    from expiry.reminders import ReminderSchedule
    from expiry.scheduler import ExpiryScheduler
    from expiry.store import ShareStore

    fresh_copy(template)
    with connection.cursor() as cursor:
        cursor.execute("SELECT MIN(expires_at) FROM sharing_share")
        first = datetime.fromisoformat(cursor.fetchone()[0]).replace(tzinfo=UTC).timestamp()
    now = [first - 1.0]

    def clock() -> float:
        return now[0]

    scheduler = ExpiryScheduler(
        ShareStore(),
        clock=clock,
        refresh_interval=3600,
        coalesce=coalesce,
        coalesce_full_rate=settings.EXPIRY_COALESCE_FULL_RATE or None,  # as runexpiry has it
        reminders=ReminderSchedule(clock=clock, send=lambda share_id: None),
    )
    housekeeper = Housekeeper(clock=clock).connect()
    checkpointer = WalCheckpointer.for_database()
    checkpointer.start()

    def run_due() -> None:
        while scheduler.step() or housekeeper.step(scheduler.seconds_until_next()):
            pass

    try:
        run_due()  # catch-up and the window's load: not counted
        cpu, started = time.thread_time(), time.perf_counter()
        while len(scheduler):  # every share was in the first window
            room = scheduler.seconds_until_next()
            now[0] += max(min(room, housekeeper.seconds_until_next(room)), 1e-6)
            run_due()
        cpu, wall = time.thread_time() - cpu, time.perf_counter() - started
    finally:
        housekeeper.disconnect()
        checkpointer.stop()
        checkpointer.join(5)
    stats = scheduler.stats
    return {
        "coalesce_ms": coalesce * 1000,
        "expired": stats.expired,
        "statements": stats.batches,
        "per_statement": stats.expired / max(stats.batches, 1),
        "cpu_us_per_expiry": cpu / max(stats.expired, 1) * 1e6,
        "wall_s": wall,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cost_probe", description=__doc__.split("\n\n")[0])
    parser.add_argument("--shares", type=int, default=30_000)
    parser.add_argument("--seconds", type=float, default=3.0, help="the deadlines' spread (rate = shares / seconds)")
    parser.add_argument("--coalesce", type=float, nargs="+", default=[0.001], metavar="SECONDS")
    parser.add_argument("--ordered", action="store_true", help="ids in deadline order (see --rate-ordered)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    from bench.in_process import scratch_django

    start = time.time() + 3600
    rng = random.Random(2)
    deadlines = [rng.uniform(start, start + args.seconds) for _ in range(args.shares)]
    with scratch_django("cost", sorted(deadlines) if args.ordered else deadlines) as template:
        results = [measure(template, coalesce) for coalesce in args.coalesce]
    if args.json:
        json.dump(results, sys.stdout, indent=1)
        return 0
    layout = "ids in deadline order" if args.ordered else "deadlines in random id order"
    print(f"{args.shares:,} shares over {args.seconds:g} s ({layout}); CPU of the daemon's thread per expiry")
    for r in results:
        print(
            f"coalesce {r['coalesce_ms']:6.2f} ms: {r['per_statement']:5.1f} expiries a statement, "
            f"{r['cpu_us_per_expiry']:6.1f} us of CPU an expiry "
            f"({r['cpu_us_per_expiry'] * args.shares / args.seconds / 1e4:5.1f} % of a core at that rate)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
