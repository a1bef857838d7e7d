"""A refresh's window: how far it reaches, and its pages.

A refresh loads the shares due before the next one (the interval follows
the policy's default lifetime, refresh_interval_for), plus an overlap.

Loading the whole window in one call kept every due share waiting until the
last row had been read and converted: ~90 ms for 10,000 rows on the slower
development VM, seconds for the window of a busy day at start-up. Read page
by page in deadline order instead, the scheduler runs due work between two
pages, and the earliest deadlines are in the heap first.

Pages start at WINDOW_PAGE rows and double, up to WINDOW_PAGE_MAX, while the
next due deadline leaves room for a page twice as long as the last one took:
each page is one or two statements, and a window of small pages only ever
was a cost when nothing was about to fall due (docs/expiry.md, "Window").
"""

import math
import time
from collections.abc import Callable
from datetime import timedelta

from expiry.store import ShareDeadline, ShareStore
from sharing.models import SharingPolicy

DAY = 86400.0
# Loaded windows overlap by this much, so a share due right at a window's end
# is already in the heap when the refresh that would load it runs late.
WINDOW_OVERLAP = 1.0

# Rows of a window's first page, and of every page read while a deadline is
# close: a due share waits for one of these (~1 ms on the slower development VM).
WINDOW_PAGE = 100
# The largest page, read only while nothing falls due for a while (~10-25 ms).
# It also bounds how long a share created meanwhile, due sooner than anything
# the heap holds, can wait for its pick-up.
WINDOW_PAGE_MAX = 1600
# A doubled page is read only when the next deadline is this many times its
# expected time away (twice the last page's): room for the machine to stall.
ROOM_FACTOR = 4


def refresh_interval_for(default_lifetime: timedelta) -> float:
    """The reference rule: a day when shares live a day or more, else a tenth
    of their lifetime, so a window always holds several lifetimes' worth."""
    lifetime = default_lifetime.total_seconds()
    return DAY if lifetime >= DAY else max(lifetime / 10, 0.001)


def policy_default_lifetime() -> timedelta:
    return SharingPolicy.current().default_lifetime


class WindowLoad:
    """The pages of one window still to read: shares due before `until`."""

    def __init__(
        self,
        store: ShareStore,
        until: float,
        page: int = WINDOW_PAGE,
        largest: int = WINDOW_PAGE_MAX,
        clock: Callable[[], float] = time.perf_counter,
    ):
        self.store = store
        self.until = until
        self.page = page
        self.largest = max(page, largest)
        self.clock = clock
        self.rows = 0  # read so far
        self.pages = 0
        self.pushed = 0  # of them new to the heap (the scheduler counts)
        self.done = False
        self._after = None  # where the next page starts
        self._last = None  # (rows asked, seconds taken) of the page before

    def next_page(self, room: float = math.inf) -> list[ShareDeadline]:
        """The window's next page; `done` once it was the last. `room`:
        seconds until the next deadline the caller must keep."""
        size = self.next_size(room)
        started = self.clock()
        page = self.store.load_window_page(self.until, self._after, size)
        self._last = (size, self.clock() - started)
        self._after = page.after
        self.done = page.after is None
        self.rows += len(page.deadlines)
        self.pages += 1
        return page.deadlines

    def next_size(self, room: float) -> int:
        """Rows the next page may read with `room` seconds to spare."""
        if self._last is None:
            return self.page
        size, took = self._last
        bigger = min(2 * size, self.largest)
        if room > ROOM_FACTOR * took * bigger / size:
            return bigger
        return self.page


def read_window(store: ShareStore, until: float, page: int = WINDOW_PAGE) -> list[ShareDeadline]:
    """Every active share expiring before `until`, in pages as a refresh
    reads them when nothing is due."""
    window = WindowLoad(store, until, page)
    deadlines = []
    while not window.done:
        deadlines += window.next_page()
    return deadlines
