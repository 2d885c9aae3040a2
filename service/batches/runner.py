"""The batch runner: each batch's lines run in the background, behind interactive calls, and survive a restart.

Lines run through a ``LineExecutor``: the request as an HTTP client would send it, answered as the REST API
answers it (the composition root gives the bridge's own translation and rendering, calling this server over
gRPC as the batch's owner). At most ``concurrency`` lines run at once over all batches, and only one while any
interactive call generates (or did within INTERACTIVE_HOLD_SECONDS), so an interactive request shares the engine
with one batch line at most. Each result is stored
with its line (service/store/batches.py) before the next is counted; a restarted server resumes every
unfinished batch from its lines without results. Once no line is left (or the batch was cancelled or passed its
24 hours), the output and error files are written (purpose ``batch_output``) and the batch ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from clients.v1 import file_pb2
from service.batches.lines import add_usage, output_line, unrun_line
from service.ids import now
from service.store.batches import Batch, BatchStore, Line, Result
from service.store.files import FileStore
from service.store.tenancy import tenant

log = logging.getLogger(__name__)

#: Statuses a line is retried on (the server busy, an engine being replaced), and how often.
RETRIED = (429, 503)
RETRIES = 5
RETRY_SECONDS = 1.0
#: Lines read from the store at a time.
READ_LINES = 64
#: How often a waiting line looks again at the interactive load.
GATE_SECONDS = 0.05
#: How long after an interactive call the runner still gives way (a client's next request follows soon).
INTERACTIVE_HOLD_SECONDS = 1.0
#: What stands in an unrun line's status (not an HTTP status: it never ran).
NOT_RUN = 0


class LineExecutor(Protocol):
    """How a line runs: its body sent to ``endpoint`` for ``owner``; (HTTP status, request id, JSON body)."""

    async def __call__(self, endpoint: str, body: dict[str, Any], owner: str) -> tuple[int, str, dict[str, Any]]:
        """Run one request."""
        ...

    async def close(self) -> None:
        """Let go of what it holds (a channel)."""
        ...


class BatchRunner:
    """Runs batches' lines, resumes them after a restart, writes their output files."""

    def __init__(
        self,
        store: BatchStore,
        files: FileStore,
        *,
        concurrency: int,
        interactive: Callable[[float], bool] = lambda seconds: False,
    ) -> None:
        """``interactive(seconds)``: whether interactive calls generate now or did within ``seconds`` (the runner
        gives way to them)."""
        self._store = store
        self._files = files
        self.concurrency = concurrency
        self._interactive = interactive
        self._executor: LineExecutor | None = None
        self._running = 0
        self._freed = asyncio.Event()
        self._batches: dict[str, asyncio.Task[None]] = {}

    @property
    def started(self) -> bool:
        """Whether lines run here (an executor was given)."""
        return self._executor is not None

    async def start(self, executor: LineExecutor) -> None:
        """Run lines through ``executor`` from now on, beginning with every unfinished batch in the store."""
        self._executor = executor
        for batch_id, owner in await self._store.unfinished():
            self.launch(batch_id, owner)

    def launch(self, batch_id: str, owner: str) -> None:
        """Run the batch (if lines run here and it does not run yet)."""
        if self._executor is None or batch_id in self._batches:
            return
        task = asyncio.create_task(self._run(batch_id, owner), name=f"batch {batch_id}")
        self._batches[batch_id] = task
        task.add_done_callback(lambda _: self._batches.pop(batch_id, None))

    async def close(self) -> None:
        """Stop running lines (what ran is stored; the rest runs after the next start)."""
        tasks = list(self._batches.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self, batch_id: str, owner: str) -> None:
        tenant.set(owner)  # what the lines store (a response, a chat completion) is the owner's
        try:
            batch = await self._store.get(batch_id, None)
            if batch is not None and batch.status in ("in_progress", "cancelling"):
                await self._lines(batch, owner)
            await self._finish(batch_id, owner)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("batch %s stopped; it resumes at the next start", batch_id)

    async def _lines(self, batch: Batch, owner: str) -> None:
        """Run every line without a result, in order, until none is left or the batch is cancelled or expired."""
        running: set[asyncio.Task[None]] = set()
        after = 0
        try:
            while lines := await self._store.pending(batch.id, after=after, limit=READ_LINES):
                for line in lines:
                    await self._take_room()
                    current = await self._store.get(batch.id, None)
                    if current is None or current.status != "in_progress" or time.time() >= current.expires_at:
                        self._give_room()
                        return
                    task = asyncio.create_task(self._line(batch, line, owner))
                    running.add(task)
                    task.add_done_callback(running.discard)
                    after = line.number
        except asyncio.CancelledError:  # the server stops: lines under way end unrecorded, to run again
            for task in running:
                task.cancel()
            raise
        finally:
            if running:
                await asyncio.gather(*running, return_exceptions=True)

    async def _line(self, batch: Batch, line: Line, owner: str) -> None:
        assert self._executor is not None  # launch() runs batches only then
        try:
            for attempt in range(RETRIES + 1):
                status, request_id, body = await self._executor(batch.endpoint, json.loads(line.body), owner)
                if status not in RETRIED or attempt == RETRIES:
                    break
                await asyncio.sleep(RETRY_SECONDS * 2**attempt)
            result = Result(line.number, status, output_line(line.custom_id, status, request_id, body))
            await self._store.record(batch.id, result, _count)
        finally:
            self._give_room()

    async def _take_room(self) -> None:
        """Wait for a place: ``concurrency`` lines at most, one while interactive calls generate."""
        while self._running >= (1 if self._interactive(INTERACTIVE_HOLD_SECONDS) else self.concurrency):
            self._freed.clear()
            with contextlib.suppress(TimeoutError):  # the interactive load is looked at again meanwhile
                await asyncio.wait_for(self._freed.wait(), GATE_SECONDS)
        self._running += 1

    def _give_room(self) -> None:
        self._running -= 1
        self._freed.set()

    async def _finish(self, batch_id: str, owner: str) -> None:
        """Record the lines that will not run (cancelled, expired), write the files, end the batch."""
        batch = await self._store.get(batch_id, None)
        if batch is None or batch.status not in ("in_progress", "cancelling", "finalizing"):
            return
        ending = {"cancelling": "cancelled"}.get(batch.status, "completed")
        if batch.status == "in_progress" and time.time() >= batch.expires_at:
            ending = "expired"
        if ending != "completed":
            code = f"batch_{ending}"
            message = f"the batch was {ending} before this request ran"
            while lines := await self._store.pending(batch_id, after=0, limit=1000):
                unrun = [Result(line.number, NOT_RUN, unrun_line(line.custom_id, code, message)) for line in lines]
                await self._store.record_many(batch_id, unrun, _count)
        await self._store.change(batch_id, lambda b: _set(b, status="finalizing", finalizing_at=now()))
        output_id, error_id = await self._write_files(batch, owner)
        stamp = {"completed": "completed_at", "cancelled": "cancelled_at", "expired": "expired_at"}[ending]

        def end(stored: Batch) -> None:
            _set(stored, status=ending, **{stamp: now()})
            stored.output_file_id = output_id
            if error_id:
                stored.error_file_id = error_id

        await self._store.change(batch_id, end)
        log.info("batch %s %s", batch_id, ending)

    async def _write_files(self, batch: Batch, owner: str) -> tuple[str, str | None]:
        """The output file (the lines answered 200) and the error file (the others, if any), in input order.

        Their ids are the batch's own, so a finalisation interrupted by a restart writes them again in place."""
        suffix = batch.id.removeprefix("batch_")
        names = {
            True: (f"file-out-{suffix}", f"{batch.id}_output.jsonl"),
            False: (f"file-err-{suffix}", f"{batch.id}_error.jsonl"),
        }
        for file_id, _ in names.values():
            await self._files.delete(file_id, None)
        written: set[bool] = set()  # which of the two files got lines
        for file_id, filename in names.values():
            record = file_pb2.File(
                id=file_id,
                object="file",
                created_at=now(),
                filename=filename,
                purpose="batch_output",
                status="processed",
            )
            await self._files.begin(record, owner, max_files=2**62)
        after = 0
        while results := await self._store.outputs(batch.id, after=after, limit=500):
            for ok in (True, False):
                text = "".join(
                    json.dumps(r.output, ensure_ascii=False) + "\n" for r in results if (r.status == 200) == ok
                )
                if text:
                    await self._files.append(names[ok][0], text.encode(), max_owner_bytes=2**62)
                    written.add(ok)
            after = results[-1].number
        await self._files.complete(names[True][0])
        if False not in written:
            await self._files.delete(names[False][0], None)
            return names[True][0], None
        await self._files.complete(names[False][0])
        return names[True][0], names[False][0]


def _count(batch: Batch, result: Result) -> None:
    """A line's result in the batch's counts and usage."""
    if result.status == 200:
        batch.request_counts.completed += 1
        body = (result.output.get("response") or {}).get("body") or {}
        add_usage(batch.usage, body)
    else:
        batch.request_counts.failed += 1


def _set(batch: Batch, **fields: Any) -> None:
    for name, value in fields.items():
        setattr(batch, name, value)
