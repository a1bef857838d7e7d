"""A refresh's window, read a page at a time.

Loading the whole window in one call kept every due share waiting until the
last row had been read and converted: ~90 ms for 10,000 rows on the slower
development VM, seconds for the window of a busy day at start-up. Read page
by page in deadline order instead, the scheduler runs due work between two
pages, and the earliest deadlines are in the heap first (docs/expiry.md,
"Window").
"""

from expiry.store import WINDOW_PAGE, ShareDeadline, ShareStore


class WindowLoad:
    """The pages of one window still to read: shares due before `until`."""

    def __init__(self, store: ShareStore, until: float, page: int = WINDOW_PAGE):
        self.store = store
        self.until = until
        self.page = page
        self.rows = 0  # read so far
        self.pages = 0
        self.pushed = 0  # of them new to the heap (the scheduler counts)
        self.done = False
        self._after = None  # where the next page starts

    def next_page(self) -> list[ShareDeadline]:
        """The window's next page; `done` once it was the last."""
        page = self.store.load_window_page(self.until, self._after, self.page)
        self._after = page.after
        self.done = page.after is None
        self.rows += len(page.deadlines)
        self.pages += 1
        return page.deadlines
