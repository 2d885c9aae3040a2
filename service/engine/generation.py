"""One submitted request as its caller sees it: a Generation to iterate, fed through a Mailbox."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

from ovserve.service.engine.types import Update
from ovserve.service.workers.errors import EngineError


class Meter(Protocol):
    """What a Generation reports to (ovserve.service.observability.metrics.GenerationMeter)."""

    def tokens(self, count: int) -> None: ...

    def end(self, outcome: str) -> None: ...


# A new Meter for one generation: (model name, prompt tokens) -> Meter. The server passes one to each Engine
# (ovserve.service.observability.metrics.GenerationMeter), so the engine knows nothing of metrics or tracing.
MeterFactory = Callable[[str, int], Meter]


class Generation:
    """One submitted request: async-iterate its Updates (the last has finished=True); close() lets go of it.

    An Update holds the steps since the engine process's last hand-over (see
    EngineCore) or, when the reader fell behind, since it last asked (see
    Mailbox). Closing before the end (the caller was cancelled or went away)
    cancels the request in the engine, which frees its KV cache at the next
    step. Iterating raises EngineError if the engine fails the request.
    """

    def __init__(self, mailbox: Mailbox, release: Callable[[bool], None], meter: Meter | None = None) -> None:
        """``release(cancel)`` lets go of the request in the engine, cancelling it if it still runs;
        ``meter`` counts its tokens and how it ended (ovserve.service.observability.metrics)."""
        self._mailbox, self._release, self._meter = mailbox, release, meter
        self._finished = False  # the engine has let go of the request
        self._closed = False

    def __aiter__(self) -> Generation:
        return self

    async def __anext__(self) -> Update:
        if self._finished:
            raise StopAsyncIteration
        try:
            update = await self._mailbox.get()
        except EngineError:
            self._finished = True
            if self._meter is not None:
                self._meter.end("failed")
            self.close()
            raise
        if self._meter is not None:
            self._meter.tokens(sum(len(delta.token_ids) for delta in update.sequences))
        if update.finished:
            self._finished = True
            if self._meter is not None:
                self._meter.end("finished")
            self.close()
        return update

    def close(self, outcome: str = "cancelled") -> None:
        """Let go of the request (idempotent); cancels it in the engine unless it has ended. ``outcome``: why, for
        the metrics when it had not ended (``cancelled``: the caller went away; ``reasoning_budget``: the server
        ended it at a reasoning budget and continues it in another request, ovserve.service.api.reasoning_budget)."""
        if not self._closed:
            self._closed = True
            if self._meter is not None:
                self._meter.end(outcome)  # no-op when it finished or failed first
            self._release(not self._finished)


class Mailbox:
    """One request's output not yet taken: updates merge as they arrive, so a reader takes all of it at once.

    A reader that fell behind thus gets one message per turn of its loop, not
    one per hand-over (vLLM's RequestOutputCollector does the same), and memory
    stays at one Update per request however far behind it is.
    """

    def __init__(self) -> None:
        self._update: Update | None = None
        self._error: EngineError | None = None
        self._ready = asyncio.Event()
        self.ended = False  # the engine is done with it: its last update or an error arrived

    def put(self, item: Update | EngineError) -> None:
        """Hand over output, or the error that ends the request."""
        if isinstance(item, EngineError):
            self._error = item
            self.ended = True
        elif self._update is None:
            self._update = item
        else:
            self._update.absorb(item)
        self.ended = self.ended or (isinstance(item, Update) and item.finished)
        self._ready.set()

    async def get(self) -> Update:
        """Everything that arrived since the last call (waits for something); output first, then the error."""
        while self._update is None and self._error is None:
            self._ready.clear()
            await self._ready.wait()
        update, self._update = self._update, None
        if update is not None:
            return update
        assert self._error is not None
        raise self._error
