"""How long a thread may hold the GIL before another runnable thread gets it: shorter than Python's 5 ms default.

The server and the bridge each run an event loop beside worker threads that do long runs of Python (reading
100,000 chat messages into dicts, checking and translating JSON). Every time the loop wants the GIL back it waits
for the holder's switch interval, and a /health answer needs it several times over: with 5 ms, /health took a
median 22.9 ms (idle 1 ms) while a chat of 100,000 messages was read, over the 20x-idle bound of
tests/rest_bridge/test_heavy_requests.py. Measured side by side in one run on a 2-core machine: 2 ms gave 9.8 ms
for the same request and the request itself 2.2 s against 2.0 s (1 ms: 5.7 ms, but 2.5 s, and the 100,000-item
Responses request 4.9 s against 3.9 s), the other heavy requests unchanged.
"""

from __future__ import annotations

import sys

SWITCH_INTERVAL_S = 0.002


def share_the_gil_sooner() -> None:
    """Set the process's GIL switch interval to SWITCH_INTERVAL_S (called where a server process starts)."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)
