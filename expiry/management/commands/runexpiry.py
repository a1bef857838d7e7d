import argparse
import gc
import logging

from django.conf import settings
from django.core.management.base import BaseCommand

from expiry.service import LEASE_CHOICES, build_service
from workers.checks import WorkerChecks
from workers.stop import WorkerStop

logger = logging.getLogger("expiry")

VERBOSITY_LEVELS = {0: logging.WARNING, 1: logging.INFO, 2: logging.DEBUG, 3: logging.DEBUG}


def freeze_start_up() -> None:
    """Move what start-up made (Django, the settings, the URLconf: ~80,000
    objects) out of the garbage collector's reach.

    A full collection scans every tracked object with the GIL held: 50-75 ms
    of the expiry thread at 10,000 expiries a second, a few times a run,
    which is every share falling due meanwhile made late. With start-up
    frozen it scans only what the daemon made since (docs/benchmarks.md, "Stalls in the expiry thread").
    """
    gc.collect()  # start-up's own garbage is not frozen with it
    gc.freeze()
    logger.debug("%d objects of the start-up frozen out of the garbage collector", gc.get_freeze_count())


def non_negative_seconds(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a number of seconds") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{raw!r} must be between 0 and 1 second")
    return value


def non_negative_rate(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a number of expiries a second") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"{raw!r} must be 0 or a positive number of expiries a second")
    return value


def positive_seconds(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{raw!r} must be more than 0 seconds")
    return value


class Command(WorkerChecks, BaseCommand):
    help = (
        "Run the expiry daemon: a background thread that keeps the active shares "
        "expiring before its next refresh in a heap and expires each one within "
        "about a millisecond of its deadline. Several may run at once: on PostgreSQL "
        "they all work (rows claimed with SKIP LOCKED, new shares announced by NOTIFY); "
        "on SQLite one holds a lease (a lock on a file beside the database) and the others "
        "stand by, taking over the moment it exits or dies. The same thread removes unfinished resumable uploads and "
        "ends upload requests at their deadlines, and hands expiry reminders to a mail thread. "
        "A second thread sends webhook deliveries (--no-webhooks "
        "turns it off). Stop it with SIGTERM or Ctrl-C: it finishes the batch and the webhook send "
        "in hand, releases its lease and exits 0."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--once",
            action="store_true",
            help="Expire every share that is already due, print how many, and exit 0 (for cron); "
            "uploads, upload requests and reminders are left to a running daemon.",
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
                "runs only as a safety net (every 2 s on PostgreSQL; on SQLite when the database is "
                "written, at most every 2 s). "
                "Default: EXPIRY_PICKUP_INTERVAL (%(default)s)."
            ),
        )
        parser.add_argument(
            "--coalesce",
            type=non_negative_seconds,
            metavar="SECONDS",
            default=settings.EXPIRY_COALESCE,
            help=(
                "Timer coalescing: when a share falls due and another falls due within the slack, "
                "wait for it and expire both in one statement. The slack is this many seconds when "
                "--coalesce-full-rate shares or more expire each second, and in proportion below it: "
                "fewer statements when thousands fall due each second, for at most this much added "
                "lateness; a lone share is never delayed. 0 turns it off. "
                "Default: EXPIRY_COALESCE (%(default)s)."
            ),
        )
        parser.add_argument(
            "--coalesce-full-rate",
            type=non_negative_rate,
            metavar="PER_SECOND",
            default=settings.EXPIRY_COALESCE_FULL_RATE,
            help=(
                "Expiries a second (measured over the last 0.1 s) at which the whole --coalesce slack "
                "applies; 0: at any rate. Default: EXPIRY_COALESCE_FULL_RATE (%(default)s)."
            ),
        )
        parser.add_argument(
            "--lease",
            choices=LEASE_CHOICES,
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
                "For a lease kept as a database row (--lease on with PostgreSQL): how long it "
                "lasts unless renewed (halfway through). A stand-by takes over from a crashed holder "
                "within about this plus one second. SQLite's lease is a lock, with no ttl. "
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
        service = build_service(
            refresh_interval=options["refresh_interval"],
            pickup_interval=options["pickup_interval"],
            coalesce=options["coalesce"],
            coalesce_full_rate=options["coalesce_full_rate"],
            lease=options["lease"],
            lease_ttl=options["lease_ttl"],
            webhooks=not options["no_webhooks"],
            reminders=not once,
            uploads=not once,
            log_expired_ids=options["log_expired_ids"],
        )
        try:
            if once:
                self.stdout.write(f"Expired {service.catch_up()} shares.")
                return
            with WorkerStop(service.stop) as stopper:
                freeze_start_up()
                service.start()
                stopper.wait_for(service.daemon)
        finally:
            service.close()
        self.stdout.write("Done.")
