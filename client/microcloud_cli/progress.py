"""A one-line progress bar on standard error, drawn only on a terminal (a
script reading the output gets the link alone)."""

import sys
import time

from microcloud_cli.units import size_text

WIDTH = 24
REDRAW_SECONDS = 0.1


class Progress:
    def __init__(self, name: str, total: int, *, quiet: bool = False, stream=None):
        self.name = name
        self.total = total
        self.stream = stream or sys.stderr
        self.drawing = not quiet and self.stream.isatty()
        self.drawn_at = 0.0

    def show(self, done: int) -> None:
        if not self.drawing:
            return
        now = time.monotonic()
        if done < self.total and now - self.drawn_at < REDRAW_SECONDS:
            return
        self.drawn_at = now
        share = done / self.total if self.total else 1.0
        bar = "#" * int(WIDTH * share)
        self.stream.write(f"\r{self.name}  [{bar:<{WIDTH}}] {share:4.0%}  {size_text(done)} of {size_text(self.total)}")
        self.stream.flush()

    def done(self) -> None:
        if self.drawing:
            self.stream.write("\n")
            self.stream.flush()
