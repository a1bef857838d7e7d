"""The machine's timer floor: how late a plain 1 ms Event.wait() returns.

No engine that sleeps until a deadline can be more punctual than this, so it
is the yardstick for the lateness figures of the same run.
"""

import threading
import time

from bench.stats import lateness_ms


def event_wait_overshoot(waits: int, timeout: float = 0.001) -> dict[str, float | int | None]:
    event = threading.Event()
    overshoot = []
    for _ in range(waits):
        start = time.perf_counter()
        event.wait(timeout)
        overshoot.append(time.perf_counter() - start - timeout)
    return lateness_ms(overshoot)
