"""The thread that drives the scheduler: wait, step, and never die.

Healthchecks' sendalerts loop, adapted: step functions return True when they
did work; a stop request only sets an Event, and the loop finishes the batch
in hand before it returns. Waiting is Event.wait(timeout) until the next
deadline (measured overshoot p99 ~0.3 ms), never a busy 1 ms loop, and a stop
request wakes it at once.
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


def backoff_delay(failures: int) -> float:
    return min(0.05 * 2 ** (failures - 1), MAX_BACKOFF)


class ExpiryDaemon(threading.Thread):
    def __init__(self, scheduler, *, using: str = "default"):
        super().__init__(name="runexpiry", daemon=True)
        self.scheduler = scheduler
        self.using = using
        self.stop_requested = threading.Event()
        self.failures = 0  # consecutive failed steps
        self.errors = 0  # failed steps in all

    def stop(self) -> None:
        self.stop_requested.set()

    def run(self) -> None:
        try:
            self.run_until_stopped()
        finally:
            connections[self.using].close()

    def run_until_stopped(self) -> None:
        while not self.stop_requested.is_set():
            if self.run_due_steps():
                self.stop_requested.wait(min(self.scheduler.seconds_until_next(), MAX_WAIT))
            else:
                self.stop_requested.wait(backoff_delay(self.failures))

    def run_due_steps(self) -> bool:
        """Run steps until none has work; return False if one failed."""
        try:
            while not self.stop_requested.is_set() and self.scheduler.step():
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
