"""The thread that drives the scheduler: wait, step, and never die.

Healthchecks' sendalerts loop, adapted: step functions return True when they
did work; a stop request only sets an Event, and the loop finishes the batch
in hand before it returns. Waiting is Event.wait(timeout) until the next
deadline (measured overshoot p99 ~0.3 ms), never a busy 1 ms loop; a stop
request or a watcher's notice wakes it at once.

With a lease (SQLite: one daemon works, the others stand by), the lease is
kept between steps: on SQLite a lock the kernel keeps (nothing to do while
held; a stand-by is woken the moment it is free), a row renewed every ttl/2
elsewhere; a stand-by also looks about once a second. Losing it empties the
scheduler; taking it starts afresh with a catch-up, so nothing depends on
what a stand-by remembered.
"""

import logging
import threading

from django.db import connections

logger = logging.getLogger("expiry")

# A failing step is retried after 50 ms, doubling up to this cap, so a locked
# or restarting database is neither hammered nor waited on for long.
MAX_BACKOFF = 2.0
# Upper bound on one wait, so a stepped wall clock is noticed within a minute.
MAX_WAIT = 60.0
# How often a stand-by looks whether the lease is free (and pokes its
# webhook thread, whose idle wait nothing else ends while it stands by).
STANDBY_POLL = 1.0


def backoff_delay(failures: int) -> float:
    return min(0.05 * 2 ** (failures - 1), MAX_BACKOFF)


class ExpiryDaemon(threading.Thread):
    def __init__(self, scheduler, *, lease=None, checkpointer=None, housekeeper=None, using: str = "default"):
        super().__init__(name="runexpiry", daemon=True)
        self.scheduler = scheduler
        self.housekeeper = housekeeper  # retention purge, ephemeral files (expiry.housekeeping)
        self.lease = lease
        self.checkpointer = checkpointer  # SQLite: WAL checkpoints off this thread
        self.using = using
        self.stop_requested = threading.Event()
        self.wake = threading.Event()
        if lease is not None:
            lease.on_taken = self.wake.set  # a lock taken in the background: start now
        # Expiring (True) or standing by (False); None until the lease is first looked at.
        self.leading: bool | None = True if lease is None else None
        # Called at each stand-by look at the lease (the webhook thread's poke:
        # a stand-by's watcher does not run, so nothing else would).
        self.on_standby = None
        self.failures = 0  # consecutive failed steps
        self.errors = 0  # failed steps in all

    def stop(self) -> None:
        self.stop_requested.set()
        self.wake.set()

    def run(self) -> None:
        watcher = self.scheduler.watcher
        if self.checkpointer is not None:
            self.checkpointer.start()
        try:
            if self.leading and watcher is not None:
                watcher.start(self.wake)
            self.run_until_stopped()
        finally:
            if self.checkpointer is not None:
                self.checkpointer.stop()
            if watcher is not None:
                watcher.stop()
            if self.lease is not None:
                self.release_lease()
            connections[self.using].close()

    def run_until_stopped(self) -> None:
        while not self.stop_requested.is_set():
            if not self.has_lease():
                if self.on_standby is not None:
                    self.on_standby()
                self.wait(STANDBY_POLL)
                continue
            if self.run_due_steps():
                timeout = min(self.scheduler.seconds_until_next(), MAX_WAIT)
                if self.housekeeper is not None:
                    timeout = min(timeout, self.housekeeper.seconds_until_next(timeout))
            else:
                timeout = backoff_delay(self.failures)
            if self.lease is not None:
                timeout = min(timeout, self.lease.seconds_until_renewal())
            self.wait(timeout)

    def wait(self, timeout: float) -> None:
        # Cleared after waking: a notice arriving while the steps run sets it
        # again, so the next wait returns at once and nothing is missed.
        self.wake.wait(timeout)
        self.wake.clear()

    def run_due_steps(self) -> bool:
        """Run steps until none has work; return False if one failed."""
        try:
            while not self.stop_requested.is_set() and self.has_lease() and self.step():
                pass
        except Exception:
            self.failures += 1
            self.errors += 1
            logger.warning(
                "expiry step failed (%d in a row), retrying in %.2f s",
                self.failures,
                backoff_delay(self.failures),
                exc_info=True,
            )
            # A dropped or poisoned connection is replaced on the next query.
            connections[self.using].close()
            return False
        self.failures = 0
        return True

    def step(self) -> bool:
        """One piece of work: expiry first; housekeeping only when no share is due."""
        if self.scheduler.step():
            return True
        housekeeper = self.housekeeper
        return housekeeper is not None and housekeeper.step(self.scheduler.seconds_until_next())

    # --- the lease ---------------------------------------------------------------

    def has_lease(self) -> bool:
        """Keep the lease if there is one; return whether this daemon may expire."""
        lease = self.lease
        if lease is None:
            return True
        try:
            holding = lease.keep(early=True)  # awake anyway: no wake-up of its own
        except Exception:
            logger.warning("could not renew or take the lease", exc_info=True)
            connections[self.using].close()
            holding = lease.held  # still ours until it would lapse
        if holding != self.leading:
            self.change_role(holding)
        return holding

    def change_role(self, leading: bool) -> None:
        was_leading, self.leading = self.leading, leading
        self.scheduler.reset()
        if self.housekeeper is not None:
            self.housekeeper.note_written()  # what others wrote while it stood by went unwatched
        watcher = self.scheduler.watcher
        if leading:
            logger.info("lease %s acquired as %s: expiring shares", self.lease.name, self.lease.owner)
            if watcher is not None:
                watcher.start(self.wake)
            return
        if watcher is not None:
            watcher.stop()
        try:
            current = self.lease.holder()
        except Exception:
            current = None
        holder = f"held by {current[0]}" if current else "not held"
        logger.log(
            logging.WARNING if was_leading else logging.INFO,
            "%sstanding by: lease %s %s; looking again every %.0f s",
            "lost the lease, " if was_leading else "",
            self.lease.name,
            holder,
            STANDBY_POLL,
        )

    def release_lease(self) -> None:
        # A stand-by releases too: its lock lease stops waiting for the lock,
        # which it would otherwise take (and keep) after this thread ended.
        try:
            self.lease.release()
            if self.leading:
                logger.info("lease %s released", self.lease.name)
        except Exception:
            logger.warning("could not release the lease; it lapses by itself", exc_info=True)
