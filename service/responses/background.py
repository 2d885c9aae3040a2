"""Background responses: runs that go on in this process after their caller got ``queued``.

Each run writes its events to an EventLog that callers, resumed streams and the
store all read; the stored Response catches up with the text every
PROGRESS_SECONDS, so a GET shows the progress. A cancelled run ends
``cancelled`` in the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field

from ovserve.service.errors import ResourceExhausted
from ovserve.service.limits import ConcurrencyLimit, clamped
from ovserve.service.responses.events import Event, ResponseEvents
from ovserve.service.responses.preparation import Prepared
from ovserve.service.responses.running import copy_response, generate, stored_response
from ovserve.service.store import tenancy
from ovserve.service.store.responses import ResponseStore

PROGRESS_SECONDS = 0.5  # how often a background run's stored Response catches up with its text


@dataclass
class EventLog:
    """Every event of a background run, for whoever follows it (now or resuming later)."""

    events: list[Event] = field(default_factory=list)
    done: bool = False
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def extend(self, events: list[Event], *, done: bool = False) -> None:
        """Publish events (and, with done, the end of the run)."""
        async with self._changed:
            self.events += events
            self.done = self.done or done
            self._changed.notify_all()

    def _ready_after(self, index: int) -> Callable[[], bool]:
        return lambda: len(self.events) > index or self.done

    async def follow(self, after: int = -1) -> AsyncIterator[Event]:
        """Events with sequence_number > after, as they come, until the run ends."""
        index = after + 1  # sequence numbers are list positions
        while True:
            async with self._changed:
                await self._changed.wait_for(self._ready_after(index))
                fresh, finished = self.events[index:], self.done
            for event in fresh:
                yield event
            index += len(fresh)
            if finished and index >= len(self.events):
                return


@dataclass
class BackgroundRun:
    """A response running in this process after its caller got ``queued``."""

    events: ResponseEvents
    log: EventLog
    model: str  # the model it runs on (an unload waits for it; an idle model with one queued is not idle)
    task: asyncio.Task[None] | None = None


class BackgroundRuns:
    """The background responses running now, by response id."""

    def __init__(self, store: ResponseStore, limit: ConcurrencyLimit | None = None) -> None:
        self._store = store
        self._limit = limit or ConcurrencyLimit()  # a run holds a place of the server's bound while it generates
        self._runs: dict[str, BackgroundRun] = {}

    def get(self, response_id: str) -> BackgroundRun | None:
        """The run of ``response_id`` if it is still going."""
        return self._runs.get(response_id)

    def using(self, names: Iterable[str]) -> int:
        """Runs going (queued or generating) on one of the models ``names``."""
        wanted = set(names)
        return sum(run.model in wanted for run in self._runs.values())

    async def start(self, prep: Prepared) -> BackgroundRun:
        """Store the response as ``queued`` and run it in a task of its own (once a place of the bound is free)."""
        if self._limit.queue_full:
            raise ResourceExhausted(
                f"{self._limit.waiting} background responses are already waiting for the server; retry later"
            )
        events = ResponseEvents(prep.response)
        run = BackgroundRun(events, EventLog(), prep.model.name)
        await run.log.extend(events.queued())
        await self._store.put(stored_response(prep, events.response))
        await self._store.append_events(prep.response.id, run.log.events)
        self._runs[prep.response.id] = run
        if (tally := tenancy.tokens_used.get()) is not None:
            tally.kept = True  # the key's limits are settled with what the run used, at its end (see _run)
        run.task = asyncio.create_task(self._run(prep, run), name=f"response-{prep.response.id}")
        return run

    async def stop(self, response_id: str) -> BackgroundRun | None:
        """Cancel the run of ``response_id`` and wait until it has ended; None if none was going."""
        run = self._runs.get(response_id)
        if run is None or run.task is None:
            return None
        run.task.cancel()
        await asyncio.gather(run.task, return_exceptions=True)
        return run

    async def close(self) -> None:
        """Cancel every run (they are marked cancelled in the store)."""
        tasks = [run.task for run in self._runs.values() if run.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _run(self, prep: Prepared, run: BackgroundRun) -> None:
        response_id = prep.response.id
        last_saved = time.monotonic()
        try:
            async with self._limit.place(clamped(prep.request.priority)):  # queued until then, by priority
                async for event in generate(prep, run.events, self._store, queued=True):
                    await run.log.extend([event])
                    await self._store.append_events(response_id, [event])
                    if time.monotonic() - last_saved > PROGRESS_SECONDS:  # GET shows the text so far
                        await self._store.update_response(copy_response(run.events.response))
                        last_saved = time.monotonic()
        except asyncio.CancelledError:
            run.events.cancel()
            with contextlib.suppress(Exception):
                await self._store.update_response(copy_response(run.events.response))
        finally:
            await run.log.extend([], done=True)
            del self._runs[response_id]
            if (tally := tenancy.tokens_used.get()) is not None:  # the start's, copied into this task's context
                tally.end(by_run=True)
