"""A one-line progress bar on stderr for long CLI operations (no dependency).

It redraws at most every 0.1 s, only when stderr is a terminal (in logs it
prints a plain line every few seconds instead), and always finishes the line.
"""
from __future__ import annotations

import sys
import time


class ProgressBar:
    def __init__(self, label: str, stream=None, *, width: int = 30):
        self.label = label
        self.stream = stream or sys.stderr
        self.width = width
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._last = 0.0
        self._start = time.monotonic()

    def update(self, done: int, total: int | None = None, note: str = "") -> None:
        now = time.monotonic()
        if now - self._last < (0.1 if self.tty else 5.0):
            return
        self._last = now
        self._draw(done, total, note)

    def _draw(self, done: int, total: int | None, note: str) -> None:
        rate = done / max(time.monotonic() - self._start, 1e-9)
        if total:
            frac = min(max(done / total, 0.0), 1.0)
            filled = int(frac * self.width)
            bar = "#" * filled + "-" * (self.width - filled)
            text = f"{self.label} [{bar}] {done:,}/{total:,} ({frac:5.1%}) {rate:,.0f}/s {note}"
        else:
            text = f"{self.label} {done:,} {rate:,.0f}/s {note}"
        if self.tty:
            self.stream.write("\r" + text.ljust(100)[:160])
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def finish(self, done: int, total: int | None = None, note: str = "") -> None:
        self._draw(done, total, note)
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
