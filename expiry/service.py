"""The expiry daemon put together: what `runexpiry` runs, and what tests and
any other entry point build instead of wiring the parts by hand.

build_service() turns the command's options into the parts: the scheduler
and its store, watcher and reminders; the daemon thread with its lease (if
any), WAL checkpointer and housekeeper; the webhook thread; the id log.
ExpiryService runs them: catch_up() for `--once`, or start(), stop() (safe
in a signal handler), join() and close(), which sends the reminders still
queued, waits for the webhook thread and logs the run's summary.
"""

import logging
import time
from collections.abc import Callable

from django.conf import settings
from django.db import connection

from expiry.checkpoint import WalCheckpointer
from expiry.daemon import ExpiryDaemon
from expiry.housekeeping import Housekeeper
from expiry.idlog import ExpiredIdLog
from expiry.lease import LeaseKeeper
from expiry.lease_lock import LockLease, lock_path
from expiry.reminders import ReminderSchedule
from expiry.requests import RequestSchedule
from expiry.scheduler import ExpiryScheduler
from expiry.store import ShareStore
from expiry.uploads import UploadSchedule
from expiry.watchers import Watcher, watcher_for
from notices.worker import default_worker
from webhooks.worker import WebhookThread
from workers.stop import WorkerStop

logger = logging.getLogger("expiry")

LEASE_CHOICES = ("auto", "on", "off")


class ExpiryService:
    def __init__(
        self,
        scheduler: ExpiryScheduler,
        daemon: ExpiryDaemon,
        housekeeper: Housekeeper,
        *,
        webhooks: WebhookThread | None = None,
        id_log: ExpiredIdLog | None = None,
    ):
        self.scheduler = scheduler
        self.daemon = daemon
        self.housekeeper = housekeeper
        self.webhooks = webhooks
        self.id_log = id_log
        self.started: float | None = None  # time.monotonic() at start()
        self.closed = False

    @property
    def lease(self) -> LeaseKeeper | LockLease | None:
        return self.daemon.lease

    def catch_up(self) -> int:
        """Expire every share already due and return how many (`--once`)."""
        return self.scheduler.catch_up()

    def start(self) -> None:
        """Start the daemon thread and the webhook thread.

        Call it from the main thread, inside a WorkerStop (workers.stop)
        that calls stop() on SIGTERM and SIGINT.
        """
        self.housekeeper.connect()
        self.started = time.monotonic()
        logger.info(
            "runexpiry started on %s (%s, pick-up every %.3f s)",
            connection.vendor,
            self.lease or "no lease",
            self.scheduler.pickup_interval,
        )
        # Worker threads never take a stop signal: it reaches the main thread's wait.
        with WorkerStop.shielded():
            self.daemon.start()
            if self.webhooks is not None:
                self.webhooks.start()

    def stop(self, *_signal_args) -> None:
        """Ask both threads to stop after the work in hand; only sets flags,
        so it may be a signal handler."""
        self.daemon.stop()
        if self.webhooks is not None:
            self.webhooks.stop()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the daemon thread to end (after stop()); runexpiry waits
        through WorkerStop.wait_for() instead, which a signal cannot miss."""
        self.daemon.join(timeout)

    def close(self) -> None:
        """After the daemon thread ended: hand the reaps back, send the
        reminders still queued, wait for the webhook thread, log the run's
        summary; close the id log. Safe to call twice, or without start()."""
        if self.closed:
            return
        self.closed = True
        try:
            if self.started is not None:
                self._finish_run()
        finally:
            if self.id_log is not None:
                self.id_log.close()

    def _finish_run(self) -> None:
        self.housekeeper.disconnect()
        # Reminders claimed but not sent yet go out now (or are logged as lost).
        default_worker().close(timeout=10)
        webhooks = self.webhooks
        if webhooks is not None and webhooks.ident is not None:
            webhooks.stop()  # the expiry thread may have ended on its own
            webhooks.join()
        stats = self.scheduler.stats
        logger.info(
            "runexpiry stopped after %.1f s: %d shares expired in %d batches (worst lateness %.3f ms, "
            "longest stamp-to-commit %.3f ms), %d caught up at start, %d picked up, %d refreshes, %d failed steps; "
            "%d ended shares purged, %d ephemeral files deleted, %d resumable uploads removed, "
            "%d upload requests ended",
            time.monotonic() - self.started,
            stats.expired,
            stats.batches,
            stats.worst_lateness * 1000,
            stats.worst_stamp_gap * 1000,
            stats.caught_up,
            stats.pickups,
            stats.refreshes,
            self.daemon.errors,
            self.housekeeper.purged,
            self.housekeeper.reaped,
            self.scheduler.uploads.stats.ended,
            self.scheduler.requests.stats.ended,
        )


def lease_for(
    using: str = "default", *, ttl: float, owner: str | None = None, clock: Callable[[], float] | None = None
) -> LeaseKeeper | LockLease:
    """The lease a daemon of this database takes turns through.

    SQLite: a lock on a file beside the database (expiry/lease_lock.py). All
    its daemons are on one machine, so the kernel can arbitrate: nothing to
    renew, and a stand-by takes over the moment the holder dies. Elsewhere
    (PostgreSQL with `--lease on`: daemons on several machines): a row
    renewed every ttl/2 (expiry/lease.py)."""
    path = lock_path(using)
    if path is not None:
        return LockLease(path, owner=owner, clock=clock, using=using)
    return LeaseKeeper(ttl=ttl, owner=owner, clock=clock, using=using)


def build_service(
    *,
    refresh_interval: float | None = None,
    pickup_interval: float | None = None,
    coalesce: float | None = None,
    coalesce_full_rate: float | None = None,
    lease: str = "auto",
    lease_ttl: float | None = None,
    lease_owner: str | None = None,
    lease_keeper: LeaseKeeper | LockLease | None = None,
    webhooks: bool = True,
    reminders: bool = True,
    uploads: bool = True,
    log_expired_ids: str | None = None,
    watcher: Watcher | None = None,
    clock: Callable[[], float] | None = None,
) -> ExpiryService:
    """Assemble the expiry daemon as `runexpiry` runs it; start nothing.

    Options left None take runexpiry's defaults from the settings
    (EXPIRY_REFRESH_INTERVAL, else the reference rule; EXPIRY_PICKUP_INTERVAL,
    EXPIRY_COALESCE, EXPIRY_COALESCE_FULL_RATE (0: the whole slack at any
    rate), EXPIRY_LEASE_TTL). `lease`: "on", "off", or "auto" (on
    for SQLite, off for PostgreSQL, where all daemons work at once); which
    kind of lease, lease_for() decides; `lease_keeper` is one built by the
    caller instead (tests).
    `reminders=False` leaves reminders out (`--once`), `uploads=False` the
    removal of resumable uploads and the end of upload requests at their
    deadline (`--once` too),
    `webhooks=False` the webhook thread. `watcher` defaults to the database's (watcher_for); `clock`
    (wall-clock seconds, time.time by default) drives the scheduler, the
    reminders and the lease. Only `log_expired_ids` acts at once: it opens
    that file and starts logging to it, until close().
    """
    if lease not in LEASE_CHOICES:
        raise ValueError(f"lease must be one of {LEASE_CHOICES}, not {lease!r}")
    id_log = ExpiredIdLog(log_expired_ids).connect() if log_expired_ids else None
    scheduler = ExpiryScheduler(
        ShareStore(),
        clock=clock,
        refresh_interval=refresh_interval or settings.EXPIRY_REFRESH_INTERVAL or None,
        watcher=watcher if watcher is not None else watcher_for(),
        pickup_interval=settings.EXPIRY_PICKUP_INTERVAL if pickup_interval is None else pickup_interval,
        coalesce=settings.EXPIRY_COALESCE if coalesce is None else coalesce,
        coalesce_full_rate=(settings.EXPIRY_COALESCE_FULL_RATE if coalesce_full_rate is None else coalesce_full_rate)
        or None,
        # Not for --once: a cron run expires what is due and leaves.
        reminders=ReminderSchedule(clock=clock) if reminders else None,
        uploads=UploadSchedule(clock=clock) if uploads else None,
        requests=RequestSchedule(clock=clock) if uploads else None,
    )
    keeper = lease_keeper
    if keeper is None and (lease == "on" or (lease == "auto" and connection.vendor == "sqlite")):
        ttl = settings.EXPIRY_LEASE_TTL if lease_ttl is None else lease_ttl
        keeper = lease_for(ttl=ttl, owner=lease_owner, clock=clock)
    housekeeper = Housekeeper(
        purge_interval=settings.EXPIRY_PURGE_INTERVAL,
        sweep_interval=settings.EXPIRY_SWEEP_INTERVAL,
        sweeps_after_writes=scheduler.watcher.sees_other_writers,
    )
    daemon = ExpiryDaemon(scheduler, lease=keeper, checkpointer=WalCheckpointer.for_database(), housekeeper=housekeeper)
    # The webhook worker rides along (one fewer process to run); every
    # daemon may run one, claims keep them from sending a delivery twice.
    webhook_thread = WebhookThread() if webhooks else None
    if webhook_thread is not None:
        # The webhook thread sleeps while nothing is pending and is poked
        # instead: by the watcher when another process committed (the leader),
        # by the stand-by's look at the lease, and by this process's own
        # events and expiries (WebhookThread.connect_pokes).
        if scheduler.watcher.sees_other_writers:
            webhook_thread.idle_wait = settings.WEBHOOK_IDLE_WAIT
        daemon.on_standby = webhook_thread.poke
    # Another process's commit: the housekeeper may have a sweep's work again.
    scheduler.watcher.on_change = call_each(housekeeper.note_written, webhook_thread.poke if webhook_thread else None)
    return ExpiryService(scheduler, daemon, housekeeper, webhooks=webhook_thread, id_log=id_log)


def call_each(*callbacks: Callable[[], object] | None) -> Callable[[], None]:
    """One callback that calls each of `callbacks` in turn (None left out)."""
    chosen = [callback for callback in callbacks if callback is not None]

    def each() -> None:
        for callback in chosen:
            callback()

    return each
