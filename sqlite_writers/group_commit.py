"""Group commit: the jobs of threads that arrive together run in one call.

A thread that submits a job while no batch is being run becomes the leader:
it calls `run_batch(take)`, which opens a transaction, waits for whatever
lock the database makes writers take, and only then calls take() for the
jobs queued so far, its own and those of every thread that arrived while it
waited. Those threads (followers) sleep until the batch has committed and
their outcome is set; a follower still queued when the batch ends becomes
the next leader. So a transaction, a commit and a turn at SQLite's write
lock are paid once per batch rather than once per job, and batches grow by
themselves exactly when writers queue: with nobody waiting, a job runs at
once, alone, as it would without this.

This decides who writes whose job, never what is written: each job is still
checked by its own statement inside the batch's transaction, and a job's
outcome is known only once that transaction committed. The lock here guards
the queue of this process; it is never held while the database is.
"""

import copy
import threading
from collections.abc import Callable
from typing import Any


class _Ticket:
    """One job's place in the queue, and its outcome once its batch ended."""

    __slots__ = ("error", "job", "leads", "outcome", "ready")

    def __init__(self, job):
        self.job = job
        self.ready = threading.Event()
        self.leads = False
        self.outcome = None
        self.error: BaseException | None = None

    def result(self):
        if self.error is not None:
            raise self.error
        return self.outcome


class GroupCommit:
    """Batches of jobs for `run_batch(take) -> outcomes`: take() returns the
    jobs queued so far (call it once, holding the database's lock), and the
    outcomes come back in the same order. An exception fails every job taken
    (each follower raises a copy of it)."""

    def __init__(self, run_batch: Callable[[Callable[[], list]], list]):
        self._run_batch = run_batch
        self._lock = threading.Lock()
        self._queued: list[_Ticket] = []
        self._leading = False

    def submit(self, job) -> Any:
        """Run `job` in the next batch; return its outcome (or raise its batch's error)."""
        ticket = _Ticket(job)
        with self._lock:
            self._queued.append(ticket)
            leads = ticket.leads = not self._leading
            self._leading = True
        if not leads:
            ticket.ready.wait()
            if not ticket.leads:  # made leader by the batch before: run the next one
                return ticket.result()
        return self._lead(ticket)

    def _lead(self, own: _Ticket):
        taken: list[_Ticket] = []

        def take() -> list:
            with self._lock:
                taken.extend(self._queued)
                self._queued.clear()
            return [ticket.job for ticket in taken]

        try:
            outcomes = self._run_batch(take)
            if len(outcomes) != len(taken):
                raise RuntimeError(f"a batch of {len(taken)} jobs gave {len(outcomes)} outcomes")
        except BaseException as error:
            if not taken:  # failed before taking anything: only this job is answered
                with self._lock:
                    self._queued.remove(own)
                taken.append(own)
            for ticket in taken:
                ticket.error = error if ticket is own else _copy_of(error)
        else:
            for ticket, outcome in zip(taken, outcomes, strict=True):
                ticket.outcome = outcome
        finally:
            self._hand_over(taken, own)
        return own.result()

    def _hand_over(self, taken: list[_Ticket], own: _Ticket) -> None:
        """Wake the batch's followers, and make the first job still queued
        (it arrived after take()) the next leader."""
        with self._lock:
            successor = self._queued[0] if self._queued else None
            if successor is None:
                self._leading = False
            else:
                successor.leads = True
        for ticket in taken:
            if ticket is not own:
                ticket.ready.set()
        if successor is not None:
            successor.ready.set()


class GroupsPerDatabase:
    """One GroupCommit per database alias, made on first use:
    `groups(using)` batches `run_batch(using, take)` for that database."""

    def __init__(self, run_batch: Callable[[str, Callable[[], list]], list]):
        self._run_batch = run_batch
        self._lock = threading.Lock()  # guards this process's map only
        self._groups: dict[str, GroupCommit] = {}

    def __call__(self, using: str) -> GroupCommit:
        with self._lock:
            group = self._groups.get(using)
            if group is None:
                group = self._groups[using] = GroupCommit(lambda take: self._run_batch(using, take))
            return group


def _copy_of(error: BaseException) -> BaseException:
    """The error for another thread to raise (raising one instance in several
    threads would tangle their tracebacks)."""
    try:
        return copy.copy(error)
    except Exception:
        return error
