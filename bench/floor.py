"""The machine's floors, the yardsticks for the engines' figures of the same run.

- How late a plain 1 ms Event.wait() returns: no engine that sleeps until a
  deadline can be more punctual than this.
- What a process costs that only wakes 20 times a second: no engine that
  polls every 50 ms can idle more cheaply than this.
"""

import subprocess
import sys
import threading
import time

from bench import procstats
from bench.stats import lateness_ms


def event_wait_overshoot(waits: int, timeout: float = 0.001) -> dict[str, float | int | None]:
    event = threading.Event()
    overshoot = []
    for _ in range(waits):
        start = time.perf_counter()
        event.wait(timeout)
        overshoot.append(time.perf_counter() - start - timeout)
    return lateness_ms(overshoot)


# A process that does nothing but wake every 50 ms, as a pick-up poll does.
WAIT_LOOP = "import threading\nevent = threading.Event()\nwhile True:\n    event.wait({interval})\n"


def wait_loop_idle(seconds: float, interval: float = 0.05) -> dict[str, float]:
    """CPU %, wake-ups/s and RSS of a bare Event.wait(interval) loop in its own
    process: the least any engine that polls that often can cost here (on a
    VM a wake-up alone can cost tens of microseconds of CPU)."""
    process = subprocess.Popen([sys.executable, "-c", WAIT_LOOP.format(interval=interval)])
    try:
        time.sleep(0.5)  # past interpreter start-up
        before, started = procstats.sample(process.pid), time.monotonic()
        time.sleep(seconds)
        after = procstats.sample(process.pid)
        return procstats.idle_figures(before, after, time.monotonic() - started)
    finally:
        process.kill()
        process.wait(5)
