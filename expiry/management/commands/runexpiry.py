import argparse
import logging
import signal
import time

from django.conf import settings
from django.core.management.base import BaseCommand

from expiry.daemon import ExpiryDaemon
from expiry.scheduler import ExpiryScheduler
from expiry.store import ShareStore
from expiry.watchers import watcher_for

logger = logging.getLogger("expiry")

VERBOSITY_LEVELS = {0: logging.WARNING, 1: logging.INFO, 2: logging.DEBUG, 3: logging.DEBUG}


def positive_seconds(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{raw!r} must be more than 0 seconds")
    return value


class Command(BaseCommand):
    help = (
        "Run the expiry daemon: a background thread that keeps the active shares "
        "expiring before its next refresh in a heap and expires each one within "
        "about a millisecond of its deadline. Stop it with SIGTERM or Ctrl-C: it "
        "finishes the batch in hand and exits 0."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--once",
            action="store_true",
            help="Expire every share that is already due, print how many, and exit 0 (for cron).",
        )
        parser.add_argument(
            "--refresh-interval",
            type=positive_seconds,
            metavar="SECONDS",
            default=settings.EXPIRY_REFRESH_INTERVAL or None,
            help=(
                "Seconds between reloads of the window of shares due before the next reload. "
                "Default: EXPIRY_REFRESH_INTERVAL, else 1 day when the policy's default lifetime "
                "is a day or more, otherwise a tenth of that lifetime."
            ),
        )
        parser.add_argument(
            "--pickup-interval",
            type=positive_seconds,
            metavar="SECONDS",
            default=settings.EXPIRY_PICKUP_INTERVAL,
            help=(
                "Seconds between checks for shares that other processes created or renewed "
                "since the last refresh; the longest a share created with a deadline sooner "
                "than this can be late. Default: EXPIRY_PICKUP_INTERVAL (%(default)s)."
            ),
        )

    def handle(self, *args, once=False, refresh_interval=None, pickup_interval=0.05, verbosity=1, **options):
        logger.setLevel(VERBOSITY_LEVELS.get(verbosity, logging.INFO))
        scheduler = ExpiryScheduler(
            ShareStore(),
            refresh_interval=refresh_interval,
            watcher=watcher_for(),
            pickup_interval=pickup_interval,
        )
        if once:
            expired = scheduler.catch_up()
            self.stdout.write(f"Expired {expired} shares.")
            return

        daemon = ExpiryDaemon(scheduler)
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: daemon.stop())
        started = time.monotonic()
        logger.info("runexpiry started (pick-up every %.3f s)", pickup_interval)
        daemon.start()
        # Signals reach only the main thread, so it waits here and relays them.
        while daemon.is_alive():
            daemon.join(0.2)
        stats = scheduler.stats
        logger.info(
            "runexpiry stopped after %.1f s: %d shares expired in %d batches (worst lateness %.3f ms), "
            "%d caught up at start, %d picked up, %d refreshes, %d failed steps",
            time.monotonic() - started,
            stats.expired,
            stats.batches,
            stats.worst_lateness * 1000,
            stats.caught_up,
            stats.pickups,
            stats.refreshes,
            daemon.errors,
        )
        self.stdout.write("Done.")
