"""How long a due share may wait for its neighbours: the scheduler's slack.

When the heap head falls due and another share falls due within the slack,
the head waits for it and both are expired in one statement. A statement
costs more than a row (its transaction, its commit, its signal), so the
slack is what keeps the daemon's CPU down when thousands fall due each
second; it is also lateness that a share would not otherwise have.

With a full rate, the slack follows the load: the whole `coalesce` at that
many expiries a second or more, in proportion below it. At 1,000 a second a
statement per share costs a fifth of a core and no share needs to wait; at
10,000 a second the statements are what the core is spent on. The rate is
measured over the daemon's own expiries, a window at a time, so the first
shares of a rush go out alone and the slack is back to nothing once the
rush is over (docs/benchmarks.md, "Coalescing that follows the load").
"""

# The rate is measured over windows of this many seconds.
RATE_WINDOW = 0.1


class Coalescing:
    def __init__(self, coalesce: float, full_rate: float | None = None):
        self.coalesce = coalesce  # seconds: the most a share waits for others
        self.full_rate = full_rate  # expiries a second at which it waits that long; None: always
        self.rate = 0.0  # expiries a second over the last window
        self._window_start: float | None = None
        self._window_count = 0

    def slack(self, head: float) -> float:
        """The slack for a heap head due at `head`."""
        if not self.coalesce or self.full_rate is None:
            return self.coalesce
        if self._window_start is None or head - self._window_start > 2 * RATE_WINDOW:
            return 0.0  # nothing expired lately: the rate measured then is stale
        return self.coalesce * min(1.0, self.rate / self.full_rate)

    def record(self, count: int, at: float) -> None:
        """Count `count` expiries stamped `at`."""
        if self._window_start is None:
            self._window_start = at  # the window starts after these
            return
        self._window_count += count
        elapsed = at - self._window_start
        if elapsed >= RATE_WINDOW:
            self.rate = self._window_count / elapsed
            self._window_start, self._window_count = at, 0
