"""sqlite_writers.group_commit: jobs of threads arriving together run in one
batch, each thread gets its own outcome, and an error fails exactly the jobs
of its batch. Real threads; the "database lock" is an Event the test opens."""

import threading
import time

import pytest

from sqlite_writers.group_commit import GroupCommit

WAIT = 10.0  # seconds before a test gives up on a thread (a hang is a failure)


def wait_until(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.001)


class Lock:
    """A batch runner whose first batch waits, before take(), until opened:
    a leader waiting for the database's lock while others arrive."""

    def __init__(self, fail_on=None, fail_before_take=False):
        self.opened = threading.Event()
        self.entered = threading.Event()
        self.batches: list[list] = []
        self.fail_on = fail_on
        self.fail_before_take = fail_before_take

    def run(self, take):
        if not self.batches and not self.opened.is_set():
            self.entered.set()
            self.opened.wait(WAIT)
            if self.fail_before_take:
                self.fail_before_take = False
                raise OSError("database is locked")
        jobs = take()
        self.batches.append(jobs)
        if self.fail_on is not None and self.fail_on in jobs:
            raise ValueError(f"job {self.fail_on} failed")
        return [job * 10 for job in jobs]


def submit_all(group: GroupCommit, jobs, results: dict) -> list[threading.Thread]:
    def submit(job):
        try:
            results[job] = group.submit(job)
        except Exception as error:  # what the caller would see
            results[job] = error

    threads = [threading.Thread(target=submit, args=(job,)) for job in jobs]
    for thread in threads:
        thread.start()
    return threads


def join(threads) -> None:
    for thread in threads:
        thread.join(WAIT)
        assert not thread.is_alive(), "a submitter never got its outcome"


def test_a_job_alone_runs_at_once_in_a_batch_of_its_own():
    lock = Lock()
    lock.opened.set()
    group = GroupCommit(lock.run)
    assert group.submit(1) == 10
    assert group.submit(2) == 20
    assert lock.batches == [[1], [2]]


def test_jobs_arriving_while_the_leader_waits_for_the_lock_run_in_its_batch():
    lock = Lock()
    group = GroupCommit(lock.run)
    results = {}
    leader = submit_all(group, [0], results)
    assert lock.entered.wait(WAIT)
    followers = submit_all(group, range(1, 8), results)
    wait_until(lambda: len(group._queued) == 8, "the followers to queue")
    lock.opened.set()
    join(leader + followers)
    assert lock.batches == [list(range(8))]  # one batch, in arrival order
    assert results == {job: job * 10 for job in range(8)}  # each thread its own outcome


def test_jobs_arriving_during_a_batch_run_in_the_next_one_led_by_one_of_them():
    opened = threading.Event()
    entered = threading.Event()
    batches = []

    def run(take):
        jobs = take()
        batches.append(jobs)
        if len(batches) == 1:
            entered.set()
            assert opened.wait(WAIT)  # others arrive after take(): not in this batch
        return [job * 10 for job in jobs]

    group = GroupCommit(run)
    results = {}
    first = submit_all(group, [0], results)
    assert entered.wait(WAIT)
    later = submit_all(group, [1, 2, 3], results)
    wait_until(lambda: len(group._queued) == 3, "the later jobs to queue")
    opened.set()
    join(first + later)
    assert batches[0] == [0]
    assert sorted(job for batch in batches[1:] for job in batch) == [1, 2, 3]
    assert results == {0: 0, 1: 10, 2: 20, 3: 30}
    assert group._leading is False  # and the next job leads again
    assert group.submit(4) == 40


def test_an_error_fails_every_job_of_its_batch_each_with_its_own_copy():
    lock = Lock(fail_on=3)
    group = GroupCommit(lock.run)
    results = {}
    leader = submit_all(group, [0], results)
    assert lock.entered.wait(WAIT)
    followers = submit_all(group, [1, 2, 3], results)
    wait_until(lambda: len(group._queued) == 4, "the followers to queue")
    lock.opened.set()
    join(leader + followers)
    errors = [results[job] for job in range(4)]
    assert all(isinstance(error, ValueError) and str(error) == "job 3 failed" for error in errors)
    assert len({id(error) for error in errors}) == 4  # no instance raised in two threads
    lock.fail_on = None
    assert group.submit(5) == 50  # the group goes on


def test_a_leader_failing_before_it_took_anything_fails_alone_and_hands_over():
    lock = Lock(fail_before_take=True)
    group = GroupCommit(lock.run)
    results = {}
    leader = submit_all(group, [0], results)
    assert lock.entered.wait(WAIT)
    followers = submit_all(group, [1, 2], results)
    wait_until(lambda: len(group._queued) == 3, "the followers to queue")
    lock.opened.set()
    join(leader + followers)
    assert isinstance(results[0], OSError)
    assert [results[1], results[2]] == [10, 20]  # the next leader ran them
    assert lock.batches == [[1, 2]]


def test_a_batch_runner_answering_the_wrong_number_of_outcomes_fails_its_jobs():
    group = GroupCommit(lambda take: [len(take())] * 2)
    with pytest.raises(RuntimeError, match="a batch of 1 jobs gave 2 outcomes"):
        group.submit("job")
