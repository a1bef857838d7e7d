"""microcloud.serve's wait for the first child to end, or for a stop signal.

In-process, in the test's main thread, with real child processes and real
signals; tests/test_hardening_make.py runs `make run` itself."""

import os
import signal
import subprocess
import threading

import pytest

from microcloud.serve import Stop, first_to_end

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def wakeup_reader():
    """The pipe a signal writes to, and a handler that raises Stop, as serve() sets them."""
    reader, writer = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    previous_fd = signal.set_wakeup_fd(writer, warn_on_full_buffer=False)

    def raise_stop(signum, frame):
        raise Stop

    previous_handler = signal.signal(signal.SIGTERM, raise_stop)
    try:
        yield reader
    finally:
        signal.signal(signal.SIGTERM, previous_handler)
        signal.set_wakeup_fd(previous_fd)
        os.close(reader)
        os.close(writer)


def test_the_child_that_ends_is_the_one_returned(wakeup_reader):
    lasting = subprocess.Popen(["sleep", "60"])
    quick = subprocess.Popen(["true"])
    try:
        assert first_to_end([lasting, quick], wakeup_reader) is quick
        assert quick.wait() == 0
        assert lasting.poll() is None
    finally:
        lasting.kill()
        lasting.wait()


def test_a_stop_signal_ends_the_wait_with_stop(wakeup_reader):
    lasting = subprocess.Popen(["sleep", "60"])
    sender = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM))

    def send_then_wait():
        sender.start()  # Stop from the wait, or before it began: both count
        first_to_end([lasting], wakeup_reader)

    try:
        with pytest.raises(Stop):
            send_then_wait()
        assert lasting.poll() is None  # still running: serve() stops it next
    finally:
        sender.cancel()
        lasting.kill()
        lasting.wait()
