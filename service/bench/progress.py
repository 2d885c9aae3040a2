"""A one-line progress bar on stderr (no dependency); silent when stderr is not a terminal unless forced."""

from __future__ import annotations

import sys
import threading
import time
from typing import Protocol, TextIO


class Progress(Protocol):
    """What a load reports its progress to: a ProgressBar, or the engine process's stand-in for one."""

    def advance(self) -> None:
        """One more request finished."""


class ProgressBar:
    """``label [#####.....] 12/40 3.1 req/s``, redrawn at most ten times a second; thread-safe."""

    def __init__(self, label: str, total: int, stream: TextIO | None = None, enabled: bool | None = None) -> None:
        self.label, self.total, self.done = label, total, 0
        self._stream = stream or sys.stderr
        self._enabled = self._stream.isatty() if enabled is None else enabled
        self._started = time.perf_counter()
        self._drawn = 0.0
        self._lock = threading.Lock()

    def advance(self) -> None:
        """One more request finished."""
        with self._lock:
            self.done += 1
            now = time.perf_counter()
            if self.done == self.total or now - self._drawn >= 0.1:
                self._drawn = now
                self._draw(now)

    def close(self) -> None:
        """End the bar's line."""
        if self._enabled:
            self._stream.write("\n")
            self._stream.flush()

    def _draw(self, now: float) -> None:
        if not self._enabled:
            return
        width = 30
        filled = width * self.done // max(1, self.total)
        rate = self.done / max(now - self._started, 1e-9)
        bar = "#" * filled + "." * (width - filled)
        self._stream.write(f"\r{self.label:<24} [{bar}] {self.done}/{self.total} {rate:.1f} req/s")
        self._stream.flush()
