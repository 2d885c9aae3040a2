"""The cyclic garbage collector kept off what a process made at startup.

A full collection walks every tracked object and holds the GIL while it does, so every thread waits, the
event loop's included. A large request (100,000 chat messages read into dicts and lists) makes enough
long-lived objects to trigger several full collections: each walked the server's whole startup heap too
(imported modules, models' Python objects), 90-110 ms a collection in a test process, 400-500 ms in one that
had run the whole suite, and /health waited as long. Frozen, that heap is skipped: the collections walk the
request's own objects.
"""

from __future__ import annotations

import gc


def freeze_startup_heap() -> int:
    """Collect what startup left behind, then move every object still alive out of the collector's reach (it
    stays alive as before: reference counting still frees it). Returns how many objects were frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
