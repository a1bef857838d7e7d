"""WorkerStop: how runexpiry and runwebhooks stop on SIGTERM or SIGINT.

In-process, in the test's main thread, with real signals sent to this
process. The subprocess tests (test_expiry_daemon.py, two signals back to
back) run the commands themselves.
"""

import os
import signal
import threading

import pytest

from workers.stop import STOP_SIGNALS, WorkerStop

pytestmark = pytest.mark.timeout(30)


class Worker(threading.Thread):
    """Runs until stopped, like a daemon thread; optionally sends signals first."""

    def __init__(self, send: tuple[int, ...] = ()):
        super().__init__(daemon=True)
        self.send = send
        self.stopped = threading.Event()
        self.mask: set[int] | None = None

    def stop(self) -> None:
        self.stopped.set()

    def run(self) -> None:
        self.mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
        for signum in self.send:
            os.kill(os.getpid(), signum)
        self.stopped.wait(20)


def test_a_stop_signal_runs_stop_and_ends_the_wait():
    worker = Worker(send=(signal.SIGTERM,))
    with WorkerStop(worker.stop) as stopper:
        with stopper.shielded():
            worker.start()
        stopper.wait_for(worker)
    assert worker.stopped.is_set()
    assert stopper.received == [signal.SIGTERM]
    assert not worker.is_alive()


def test_two_signals_back_to_back_stop_it_once_each():
    for _ in range(50):
        worker = Worker(send=(signal.SIGINT, signal.SIGTERM))
        with WorkerStop(worker.stop) as stopper:
            with stopper.shielded():
                worker.start()
            stopper.wait_for(worker)
        assert sorted(stopper.received) == sorted([signal.SIGINT, signal.SIGTERM])
        assert not worker.is_alive()


def test_a_signal_arriving_while_stop_runs_never_runs_stop_inside_it():
    """The second of two signals landing while the first one's stop() holds a
    lock (as threading.Event.set does): a handler that called stop() itself
    waited for that lock forever (runexpiry, seen in CI, its stacks dumped)."""
    worker = Worker(send=(signal.SIGTERM,))
    lock = threading.Lock()  # not reentrant, like an Event's
    calls = []

    def stop() -> None:
        with lock:
            calls.append("stop")
            os.kill(os.getpid(), signal.SIGINT)  # its handler runs at the next bytecode, in here
            sum(range(1000))
        worker.stop()

    with WorkerStop(stop) as stopper:
        with stopper.shielded():
            worker.start()
        stopper.wait_for(worker)
    assert calls == ["stop"]  # once, whatever came after
    assert stopper.received == [signal.SIGTERM, signal.SIGINT]


def test_a_thread_that_ends_on_its_own_ends_the_wait_without_a_stop():
    ended = threading.Event()
    worker = threading.Thread(target=ended.set, daemon=True)
    calls = []
    with WorkerStop(lambda: calls.append("stop")) as stopper:
        with stopper.shielded():
            worker.start()
        stopper.wait_for(worker)
    assert ended.is_set()
    assert calls == []


def test_threads_started_shielded_never_take_a_stop_signal():
    """The kernel gives a process's signal to any thread not blocking it; the
    main thread's wait sees it only if the worker threads all block it."""
    worker = Worker()
    with WorkerStop(worker.stop) as stopper:
        with stopper.shielded():
            worker.start()
        assert set(STOP_SIGNALS) - signal.pthread_sigmask(signal.SIG_BLOCK, []) == set(STOP_SIGNALS)
        os.kill(os.getpid(), signal.SIGTERM)
        stopper.wait_for(worker)
    assert set(STOP_SIGNALS) <= worker.mask


def test_the_previous_handlers_and_wakeup_fd_come_back():
    before = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    with WorkerStop(lambda: None):
        assert all(signal.getsignal(signum) != before[signum] for signum in STOP_SIGNALS)
    assert {signum: signal.getsignal(signum) for signum in STOP_SIGNALS} == before
    previous = signal.set_wakeup_fd(-1)
    assert previous == -1


def test_sigusr2_writes_every_threads_stack_and_goes_on(capfd):
    parked = threading.Event()
    worker = threading.Thread(target=parked.wait, name="parked-worker")
    with WorkerStop(lambda: None) as stopper:
        with stopper.shielded():
            worker.start()
        os.kill(os.getpid(), signal.SIGUSR2)
        parked.set()
        stopper.wait_for(worker)
        assert stopper.received == []  # not a stop signal

    err = capfd.readouterr().err
    assert "Current thread" in err
    assert "in wait" in err  # the parked worker's frame
