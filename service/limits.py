"""How much work the server takes on at once: one count for API calls and background responses alike.

--max-concurrent-requests bounds it (0: no bound). A call beyond the bound is
refused (RESOURCE_EXHAUSTED, retry later); a background response waits for a
place instead (it stays ``queued``), up to MAX_QUEUED_PER_PLACE per place, past
which creating one is refused too.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

MAX_QUEUED_PER_PLACE = 4  # background responses that may wait, per place of the bound


class ConcurrencyLimit:
    """Places for work: taken at once by calls, waited for by background responses."""

    def __init__(self, limit: int = 0) -> None:
        self.limit = limit  # 0: unbounded
        self.in_use = 0
        self.waiting = 0
        self._freed = asyncio.Condition()

    def try_take(self) -> bool:
        """Take a place if one is free."""
        if self.limit and self.in_use >= self.limit:
            return False
        self.in_use += 1
        return True

    def release(self) -> None:
        """Give a place back (wakes a waiting background response)."""
        self.in_use -= 1
        if self.waiting:
            asyncio.get_running_loop().create_task(self._notify())

    @property
    def queue_full(self) -> bool:
        """Whether no more background responses may wait for a place."""
        return bool(self.limit) and self.waiting >= self.limit * MAX_QUEUED_PER_PLACE

    @contextlib.asynccontextmanager
    async def place(self) -> AsyncIterator[None]:
        """Hold a place for the block, waiting for one first if need be."""
        if not self.try_take():
            self.waiting += 1
            try:
                async with self._freed:
                    await self._freed.wait_for(self.try_take)
            finally:
                self.waiting -= 1
        try:
            yield
        finally:
            self.release()

    async def _notify(self) -> None:
        async with self._freed:
            self._freed.notify_all()
