"""How late shares fall due while the daemon reads a big window.

    python -m bench.window_probe [--rows 1000000] [--early 1000] [--early-seconds 10] [--pages 100 2000000]
                               [--page-max ROWS]

A daemon starting on a busy table (or refreshing a day's window) reads every
share of its window before it knows them all. This probe fills a scratch
database with `--rows` shares due over the next day and `--early` more due
in its first `--early-seconds`, then runs the real scheduler and store in-process with a
clock that follows the wall clock from just before the first deadline,
stepping and waiting as the daemon thread does, with the reminders'
schedule as runexpiry has it (the policy's 24-hour lead; mail not sent),
until every early share is due and the window and its reminders are read. For each page size it prints the window's load
time, the longest single step and the expiries' worst lateness: with one
page holding the whole window (the size above the row count), a step reads
it all, and every share due meanwhile waits for it.
"""

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

LEAD = 1.0  # the first early share falls due this long after the start


def reading(scheduler) -> bool:
    return scheduler.loading_window or scheduler.reminders.loading


def measure(template: Path, page: int, page_max: int, first: float, early_seconds: float) -> dict:
    """Run a scheduler on a copy of `template`, reading `page` rows a step
    (up to `page_max` while nothing is due soon)."""
    from bench.in_process import fresh_copy
    from expiry.reminders import ReminderSchedule
    from expiry.scheduler import ExpiryScheduler
    from expiry.store import ShareStore

    fresh_copy(template)
    # The copy's dirty pages written back now: not as a stall of the run's first commit.
    os.sync()
    origin = time.perf_counter()

    def clock() -> float:
        return first - LEAD + time.perf_counter() - origin

    scheduler = ExpiryScheduler(
        ShareStore(),
        clock=clock,
        reminders=ReminderSchedule(send=lambda share_id: None, clock=clock, page=page, page_max=page_max),
        refresh_interval=2 * 86400,
        window_page=page,
        window_page_max=page_max,
    )
    longest = steps = steps_reading = 0
    loaded_after = None
    while clock() < first + early_seconds or loaded_after is None:
        steps_reading += reading(scheduler)  # the refresh's first page is not counted
        started = time.perf_counter()
        worked = scheduler.step()
        longest = max(longest, time.perf_counter() - started)
        steps += worked
        if loaded_after is None and scheduler.stats.refreshes and not reading(scheduler):
            loaded_after = clock() - (first - LEAD)
        if not worked:
            time.sleep(min(scheduler.seconds_until_next(), 0.05))
    stats = scheduler.stats
    return {
        "page": page,
        "page_max": max(page, page_max),
        "window_rows": len(scheduler) + stats.expired,
        "loaded_after_s": loaded_after,
        "steps": steps,
        "steps_while_reading": steps_reading,
        "longest_step_ms": longest * 1000,
        "expired": stats.expired,
        "worst_lateness_ms": stats.worst_lateness * 1000,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.window_probe", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="shares due over the day after the start")
    parser.add_argument("--early", type=int, default=1000, help="shares due soon after the start")
    parser.add_argument("--early-seconds", type=float, default=10.0, help="the early shares' spread")
    parser.add_argument("--pages", type=int, nargs="+", default=[100, 2_000_000], metavar="ROWS", help="page sizes")
    parser.add_argument(
        "--page-max",
        type=int,
        metavar="ROWS",
        help="largest page while nothing is due soon (default: the daemon's own; the page size: fixed pages)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    from bench.in_process import scratch_django

    first = time.time() + 3600  # nothing is due while the table fills
    rng = random.Random(3)
    early = [rng.uniform(first, first + args.early_seconds) for _ in range(args.early)]
    later = [rng.uniform(first + args.early_seconds, first + 86400) for _ in range(args.rows)]
    first = min(early, default=first)
    with scratch_django("window", sorted(early + later)) as template:
        from expiry.management.commands.runexpiry import freeze_start_up
        from expiry.window import WINDOW_PAGE_MAX

        freeze_start_up()  # as runexpiry does: full collections then skip Django's objects
        page_max = WINDOW_PAGE_MAX if args.page_max is None else args.page_max
        results = [measure(template, page, page_max, first, args.early_seconds) for page in args.pages]
    if args.json:
        json.dump(results, sys.stdout, indent=1)
        return 0
    print(f"{args.rows + args.early:,} shares in the window, {args.early:,} due in its first {args.early_seconds:g} s")
    for r in results:
        print(
            f"page {r['page']:>9,} rows (up to {r['page_max']:,}): "
            f"window read {r['loaded_after_s']:6.2f} s after the start, "
            f"longest step {r['longest_step_ms']:8.1f} ms, {r['expired']:,} expired, "
            f"worst lateness {r['worst_lateness_ms']:8.1f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
