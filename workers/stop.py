"""How a background worker (runexpiry, runwebhooks) stops on SIGTERM or SIGINT.

The kernel hands a process's signal to any thread that does not block it,
and one taken by a worker thread never woke the main thread: the stop was
lost. So the worker threads are started with both signals blocked
(`WorkerStop.shielded()`): they always reach the main thread.

The main thread does not wait in Thread.join() either. Python runs a
signal's handler between bytecodes; a signal that lands after the last
check and before join() sleeps on its lock only marks the handler as due,
and the handler (the one that asks the threads to stop) waits for join() to
return: the process never stops (seen twice in loaded CI runs; rare, but a
supervisor then has to kill it). It waits instead in select() on a pipe that
Python's C-level handler writes to as the signal arrives
(signal.set_wakeup_fd), and that a watcher thread writes to when the worker
thread ends, so neither a signal nor an end is missed, whenever it comes. No
timeout: an idle worker costs no wake-ups. microcloud/serve.py waits for its
children the same way.

The handler itself only notes the signal; `stop` is called from the wait's
loop. Python runs a handler between any two bytecodes of the main thread,
also in the middle of a `stop` already running for an earlier signal: a
handler that called `stop` again deadlocked on the lock the interrupted call
held (threading.Event.set takes one; seen with SIGINT and SIGTERM back to
back, its stacks dumped as below).

SIGUSR2 writes every thread's stack to stderr (faulthandler) and goes on:
`kill -USR2 <pid>` shows what a worker that does not stop is waiting for.
"""

import contextlib
import faulthandler
import os
import select
import signal
import threading
from collections.abc import Callable, Iterator

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
STACKS_SIGNAL = signal.SIGUSR2


class WorkerStop:
    """Call `stop` (once) on SIGTERM or SIGINT, from wait_for(); wait for a thread.

    Use it from the main thread:

        with WorkerStop(service.stop) as stopper:
            with stopper.shielded():
                thread.start()
            stopper.wait_for(thread)
    """

    def __init__(self, stop: Callable[[], None]):
        self.stop = stop
        self.received: list[int] = []  # the stop signals seen, in order
        self._read_fd = self._write_fd = -1
        self._previous_handlers: dict[int, object] = {}
        self._previous_wakeup_fd = -1
        self._stopped = False

    def __enter__(self) -> "WorkerStop":
        self._read_fd, self._write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._previous_wakeup_fd = signal.set_wakeup_fd(self._write_fd, warn_on_full_buffer=False)
        for signum in STOP_SIGNALS:
            self._previous_handlers[signum] = signal.signal(signum, self._on_signal)
        faulthandler.register(STACKS_SIGNAL, all_threads=True)
        return self

    def __exit__(self, *exc_info) -> None:
        faulthandler.unregister(STACKS_SIGNAL)
        for signum, handler in self._previous_handlers.items():
            signal.signal(signum, handler)
        signal.set_wakeup_fd(self._previous_wakeup_fd)
        os.close(self._read_fd)
        os.close(self._write_fd)

    def _on_signal(self, signum, _frame) -> None:
        # Nothing that takes a lock: this may run inside stop() itself.
        self.received.append(signum)

    def _stop_if_asked(self) -> None:
        if self.received and not self._stopped:
            self._stopped = True
            self.stop()

    @staticmethod
    @contextlib.contextmanager
    def shielded() -> Iterator[None]:
        """Threads started inside never take a stop signal (they inherit the mask)."""
        stop_signals = set(STOP_SIGNALS)
        signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
        try:
            yield
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, stop_signals)

    def wait_for(self, thread: threading.Thread) -> None:
        """Block until `thread` ends, running the stop handler for each signal."""
        watcher = threading.Thread(target=self._mark_end, args=(thread,), name=f"{thread.name}-end", daemon=True)
        with self.shielded():
            watcher.start()
        while thread.is_alive():
            self._stop_if_asked()
            # Readable once a signal or the end arrived, even if it arrived before
            # the call; the loop's next bytecode runs the signal's handler.
            select.select([self._read_fd], [], [])
            with contextlib.suppress(BlockingIOError):
                os.read(self._read_fd, 512)
        thread.join()
        watcher.join()  # its write done before __exit__ closes the pipe

    def _mark_end(self, thread: threading.Thread) -> None:
        thread.join()  # not the main thread: no signal reaches this one
        with contextlib.suppress(BlockingIOError):  # full: the wait wakes anyway
            os.write(self._write_fd, b"\0")
