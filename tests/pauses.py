"""How long a thread waits for the GIL while some work runs in another: the measure of work that holds it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any


def longest_pause_while(work: Callable[[], Any]) -> float:
    """The longest a thread that wakes every millisecond waited for its turn while ``work`` ran (seconds)."""
    pauses: list[float] = []
    done = threading.Event()

    def tick() -> None:
        last = time.perf_counter()
        while not done.is_set():
            time.sleep(0.001)
            now = time.perf_counter()
            pauses.append(now - last)
            last = now

    ticker = threading.Thread(target=tick)
    ticker.start()
    time.sleep(0.05)
    try:
        work()
    finally:
        done.set()
        ticker.join()
    return max(pauses)
