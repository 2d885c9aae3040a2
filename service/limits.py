"""How much work the server takes on at once: one count for API calls and background responses alike.

--max-concurrent-requests bounds it (0: no bound). A call beyond the bound
waits for a place if --max-queued-requests lets it (lowest priority first),
else it is refused (RESOURCE_EXHAUSTED, retry later); a background response
waits for a place instead (it stays ``queued``), up to MAX_QUEUED_PER_PLACE
per place, past which creating one is refused too.

Waiting calls and background responses share one queue, ordered by
``priority`` (vLLM's: lower first) with aging: a waiter gains one level per
PRIORITY_AGING_SECONDS it waits. Since every waiter ages alike, the order is
``priority * PRIORITY_AGING_SECONDS + arrival`` and never changes while they
wait: a waiter is passed only by one that came less than ``(its priority -
the other's) * PRIORITY_AGING_SECONDS`` after it, and priorities count only
within +-PRIORITY_LEVELS, so nothing that came more than
``2 * PRIORITY_LEVELS * PRIORITY_AGING_SECONDS`` (120 s) later ever passes it.
A freed place goes straight to the first waiter; batch lines never wait
(``try_take`` refuses while anyone waits), so they stay behind every call.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

MAX_QUEUED_PER_PLACE = 4  # background responses that may wait, per place of the bound
PRIORITY_AGING_SECONDS = 1.0  # a waiter's wait worth one level of priority
PRIORITY_LEVELS = 60  # priorities beyond +-this count as +-this (the starvation bound's span)


def clamped(priority: int) -> int:
    """The priority as the queue counts it: within +-PRIORITY_LEVELS."""
    return max(-PRIORITY_LEVELS, min(PRIORITY_LEVELS, priority))


@dataclass(order=True)
class _Waiter:
    rank: float  # priority * PRIORITY_AGING_SECONDS + arrival: lower goes first, for good
    order: int  # arrival order among equal ranks
    granted: asyncio.Future[None] = field(compare=False)


class ConcurrencyLimit:
    """Places for work: taken at once when free, else waited for in priority order (calls, if ``queue`` lets
    them; background responses)."""

    def __init__(self, limit: int = 0, queue: int = 0, clock: Callable[[], float] = time.monotonic) -> None:
        """``limit``: places (0: unbounded); ``queue``: calls that may wait for one (0: none waits)."""
        self.limit = limit
        self.queue = queue
        self.in_use = 0
        self.waiting = 0  # background responses waiting
        self.calls_waiting = 0  # calls waiting
        self._heap: list[_Waiter] = []
        self._arrivals = itertools.count()
        self._clock = clock

    def try_take(self) -> bool:
        """Take a place if one is free and nobody waits for one."""
        if self.limit and (self.in_use >= self.limit or self._heap):
            return False
        self.in_use += 1
        return True

    def release(self) -> None:
        """Give a place back: to the first waiter if any (the place stays taken), else free it."""
        while self._heap:
            waiter = heapq.heappop(self._heap)
            if not waiter.granted.done():  # (a waiter that gave up is skipped)
                waiter.granted.set_result(None)
                return
        self.in_use -= 1

    @property
    def queue_full(self) -> bool:
        """Whether no more background responses may wait for a place."""
        return bool(self.limit) and self.waiting >= self.limit * MAX_QUEUED_PER_PLACE

    @property
    def call_queue_full(self) -> bool:
        """Whether no more calls may wait for a place (--max-queued-requests)."""
        return self.calls_waiting >= self.queue

    async def wait_for_place(self, priority: int = 0) -> float:
        """Take a place, waiting for one in priority order if need be; return the seconds waited. A cancelled
        wait leaves the queue (or gives back the place granted meanwhile)."""
        if self.try_take():
            return 0.0
        arrived = self._clock()
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        rank = clamped(priority) * PRIORITY_AGING_SECONDS + arrived
        heapq.heappush(self._heap, _Waiter(rank, next(self._arrivals), granted))
        try:
            await asyncio.shield(granted)
        except BaseException:
            if granted.done():
                self.release()  # granted as it was cancelled: the place goes on to the next one
            else:
                granted.cancel()  # release() skips it
            raise
        return self._clock() - arrived

    async def wait_as_call(self, priority: int) -> float:
        """``wait_for_place`` counted as a waiting call."""
        self.calls_waiting += 1
        try:
            return await self.wait_for_place(priority)
        finally:
            self.calls_waiting -= 1

    @contextlib.asynccontextmanager
    async def place(self, priority: int = 0) -> AsyncIterator[None]:
        """Hold a place for the block, waiting for one first if need be (a background response)."""
        self.waiting += 1
        try:
            await self.wait_for_place(priority)
        finally:
            self.waiting -= 1
        try:
            yield
        finally:
            self.release()
