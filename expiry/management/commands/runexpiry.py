import argparse
import logging
import signal
import time

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import connection

from expiry.checkpoint import WalCheckpointer
from expiry.daemon import ExpiryDaemon
from expiry.housekeeping import Housekeeper
from expiry.idlog import ExpiredIdLog
from expiry.lease import LeaseKeeper
from expiry.reminders import ReminderSchedule
from expiry.scheduler import ExpiryScheduler
from expiry.store import ShareStore
from expiry.watchers import watcher_for
from notices.worker import default_worker
from webhooks.worker import WebhookThread

logger = logging.getLogger("expiry")

VERBOSITY_LEVELS = {0: logging.WARNING, 1: logging.INFO, 2: logging.DEBUG, 3: logging.DEBUG}


def non_negative_seconds(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a number of seconds") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{raw!r} must be between 0 and 1 second")
    return value


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
        "about a millisecond of its deadline. Several may run at once: on PostgreSQL "
        "they all work (rows claimed with SKIP LOCKED, new shares announced by NOTIFY); "
        "on SQLite one holds a lease and the others stand by, taking over within about "
        "--lease-ttl seconds if it dies. A second thread sends webhook deliveries (--no-webhooks "
        "turns it off). Stop it with SIGTERM or Ctrl-C: it finishes the batch and the webhook send "
        "in hand, releases its lease and exits 0."
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
                "since the last refresh, while notices cannot reach this daemon (SQLite: its "
                "wake-up socket is not bound; PostgreSQL: its LISTEN connection is down). "
                "It bounds how late such a share can be. With notices arriving, the check "
                "runs only as a safety net (every 1 s on SQLite, 2 s on PostgreSQL). "
                "Default: EXPIRY_PICKUP_INTERVAL (%(default)s)."
            ),
        )
        parser.add_argument(
            "--coalesce",
            type=non_negative_seconds,
            metavar="SECONDS",
            default=settings.EXPIRY_COALESCE,
            help=(
                "Timer coalescing: when a share falls due and another falls due within this many "
                "seconds, wait for it and expire both in one statement. Fewer statements when "
                "thousands fall due each second, for at most this much added lateness; a lone share is "
                "never delayed. 0 turns it off. Default: EXPIRY_COALESCE (%(default)s)."
            ),
        )
        parser.add_argument(
            "--lease",
            choices=["auto", "on", "off"],
            default="auto",
            help=(
                "Whether daemons take turns through a lease (one expires, the others stand by). "
                "auto (default): on for SQLite, off for PostgreSQL, where all daemons work at once."
            ),
        )
        parser.add_argument(
            "--lease-ttl",
            type=positive_seconds,
            metavar="SECONDS",
            default=settings.EXPIRY_LEASE_TTL,
            help=(
                "How long the lease lasts unless renewed (every third of it). A stand-by takes "
                "over from a crashed holder within about this plus one second. "
                "Default: EXPIRY_LEASE_TTL (%(default)s)."
            ),
        )
        parser.add_argument(
            "--no-webhooks",
            action="store_true",
            help=(
                "Do not send webhook deliveries from this daemon. By default a worker thread sends them "
                "(each delivery is claimed by one daemon; see docs/api.md, Webhooks); use this when "
                "`manage.py runwebhooks` runs as a process of its own."
            ),
        )
        parser.add_argument(
            "--log-expired-ids",
            metavar="PATH",
            help="Append '<id> <ended_at epoch>' for every share this daemon expires to PATH (for audits).",
        )

    def handle(self, *args, once=False, verbosity=1, **options):
        if verbosity != 1:  # 1, the default, keeps LOG_LEVEL from the settings
            logger.setLevel(VERBOSITY_LEVELS.get(verbosity, logging.DEBUG))
        id_log = ExpiredIdLog(options["log_expired_ids"]).connect() if options["log_expired_ids"] else None
        try:
            self.run(once=once, **options)
        finally:
            if id_log is not None:
                id_log.close()

    def run(self, *, once, refresh_interval, pickup_interval, coalesce, lease, lease_ttl, no_webhooks, **options):
        scheduler = ExpiryScheduler(
            ShareStore(),
            refresh_interval=refresh_interval,
            watcher=watcher_for(),
            pickup_interval=pickup_interval,
            coalesce=coalesce,
            # Not for --once: a cron run expires what is due and leaves.
            reminders=None if once else ReminderSchedule(),
        )
        if once:
            expired = scheduler.catch_up()
            self.stdout.write(f"Expired {expired} shares.")
            return

        use_lease = lease == "on" or (lease == "auto" and connection.vendor == "sqlite")
        keeper = LeaseKeeper(ttl=lease_ttl) if use_lease else None
        housekeeper = Housekeeper(
            purge_interval=settings.EXPIRY_PURGE_INTERVAL, sweep_interval=settings.EXPIRY_SWEEP_INTERVAL
        ).connect()
        daemon = ExpiryDaemon(
            scheduler, lease=keeper, checkpointer=WalCheckpointer.for_database(), housekeeper=housekeeper
        )
        # The webhook worker rides along (one fewer process to run); every
        # daemon may run one, claims keep them from sending a delivery twice.
        webhooks = None if no_webhooks else WebhookThread()

        def stop(*_):
            daemon.stop()
            if webhooks is not None:
                webhooks.stop()

        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, stop)
        started = time.monotonic()
        logger.info(
            "runexpiry started on %s (%s, pick-up every %.3f s)",
            connection.vendor,
            f"lease ttl {lease_ttl:g} s" if keeper else "no lease",
            pickup_interval,
        )
        # The kernel hands a process's signal to any thread that does not block
        # it; one taken by a worker thread never wakes the main thread's
        # blocking join(), and the stop request was lost (~1 run in 4 hung on
        # SIGINT then SIGTERM). So the daemon thread, and every thread it
        # starts, blocks them: they always reach the main thread, whose join()
        # they interrupt to run the handler. No polling wake-ups needed.
        stop_signals = {signal.SIGTERM, signal.SIGINT}
        signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
        try:
            daemon.start()
            if webhooks is not None:
                webhooks.start()
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, stop_signals)
        daemon.join()
        housekeeper.disconnect()
        # Reminders claimed but not sent yet go out now (or are logged as lost).
        default_worker().close(timeout=10)
        if webhooks is not None:
            webhooks.stop()  # the expiry thread may have ended on its own
            webhooks.join()
        stats = scheduler.stats
        logger.info(
            "runexpiry stopped after %.1f s: %d shares expired in %d batches (worst lateness %.3f ms, "
            "longest stamp-to-commit %.3f ms), %d caught up at start, %d picked up, %d refreshes, %d failed steps; "
            "%d ended shares purged, %d ephemeral files deleted",
            time.monotonic() - started,
            stats.expired,
            stats.batches,
            stats.worst_lateness * 1000,
            stats.worst_stamp_gap * 1000,
            stats.caught_up,
            stats.pickups,
            stats.refreshes,
            daemon.errors,
            housekeeper.purged,
            housekeeper.reaped,
        )
        self.stdout.write("Done.")
