"""Work too large for the event loop: parsing bodies and replies, in one thread beside it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
INLINE_BODY_BYTES = 64 * 1024  # larger bodies and replies are parsed and translated off the event loop, in PARSER
# One thread: parsing holds the GIL, so more threads add no speed, only more turns the event loop
# waits for (measured: 8 megabyte bodies at once, /health's worst 116-412 ms with a thread each).
PARSER = ThreadPoolExecutor(1, thread_name_prefix="bridge-parser")


async def off_the_loop_if_large(size: int, work: Callable[[], T]) -> T:
    """``work()`` (parsing or translating ``size`` bytes): inline when small, else in PARSER, so other requests
    and their streams go on meanwhile."""
    if size <= INLINE_BODY_BYTES:
        return work()
    return await asyncio.get_running_loop().run_in_executor(PARSER, work)
