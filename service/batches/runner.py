"""The batch runner: each batch's lines run in the background, behind interactive calls, and survive a restart.

Lines run through a ``LineExecutor``: the request as an HTTP client would send it, answered as the REST API
answers it (the composition root gives the bridge's own translation and rendering, calling this server over
gRPC as the batch's owner). At most ``concurrency`` lines run at once over all batches, and only one while any
interactive call generates (or did within INTERACTIVE_HOLD_SECONDS), so an interactive request shares the engine
with one batch line at most. Each result is stored
with its line (service/store/batches.py) before the next is counted; a restarted server resumes every
unfinished batch from its lines without results. Once no line is left (or the batch was cancelled or passed its
24 hours), the output and error files are written (purpose ``batch_output``) and the batch ends.

Those files count against the owner's bound on stored bytes (--max-tenant-upload-bytes) from the first line on:
their records are reserved when the batch starts, and each line's result is counted in the transaction that
records it. A result that does not fit is not recorded: the batch ends ``failed`` with an error naming the bound,
no line starts after it, and its files hold the lines recorded before it (within the bound); that line, the
lines still running and the lines not run are in neither file.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from clients.defaults import MIB
from clients.v1 import batch_pb2, file_pb2
from service.batches.lines import add_usage, output_line, unrun_line
from service.ids import now
from service.store.batches import Batch, BatchStore, Line, OutputFiles, Result
from service.store.files import BYTES_FLAG, FileStore, StorageFull
from service.store.tenancy import tenant

log = logging.getLogger(__name__)

#: Statuses a line is retried on (the server busy, an engine being replaced), and how often.
RETRIED = (429, 503)
RETRIES = 5
RETRY_SECONDS = 1.0
#: Lines read from the store at a time (to run), and recorded lines read at a time (to write the files: an
#: embeddings line's output can take megabytes).
READ_LINES = 64
READ_OUTPUTS = 16
#: The bytes of an output file's chunks as written.
CHUNK_BYTES = MIB
#: The error of a batch whose files would pass the owner's bound on stored bytes.
STORAGE_LIMIT = "storage_limit_exceeded"
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
        max_owner_bytes: int,
        interactive: Callable[[float], bool] = lambda seconds: False,
    ) -> None:
        """``max_owner_bytes``: what an owner's files may take, batches' output and error files included;
        ``interactive(seconds)``: whether interactive calls generate now or did within ``seconds`` (the runner
        gives way to them)."""
        self._store = store
        self._files = files
        self.max_owner_bytes = max_owner_bytes
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
                await self._reserve(batch, owner)  # before any line is counted to them
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
            try:
                await self._store.record(batch.id, result, _count, self._output_files(batch.id))
            except StorageFull:  # no line starts after this one (the batch is no longer in progress)
                await self._store.change(batch.id, lambda stored: _fail(stored, self.max_owner_bytes))
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
            try:
                while lines := await self._store.pending(batch_id, after=0, limit=1000):
                    unrun = [Result(line.number, NOT_RUN, unrun_line(line.custom_id, code, message)) for line in lines]
                    await self._store.record_many(batch_id, unrun, _count, self._output_files(batch_id))
            except StorageFull:
                await self._store.change(batch_id, lambda stored: _fail(stored, self.max_owner_bytes))
        batch = await self._store.change(batch_id, _finalizing)
        if batch.errors.data:  # (_fail's: the files would pass the owner's bound)
            ending = "failed"
        output_id, error_id = await self._write_files(batch, owner)
        stamp = {
            "completed": "completed_at",
            "cancelled": "cancelled_at",
            "expired": "expired_at",
            "failed": "failed_at",
        }[ending]

        def end(stored: Batch) -> None:
            _set(stored, status=ending, **{stamp: now()})
            stored.output_file_id = output_id
            if error_id:
                stored.error_file_id = error_id

        await self._store.change(batch_id, end)
        log.info("batch %s %s", batch_id, ending)

    def _output_files(self, batch_id: str) -> OutputFiles:
        return OutputFiles.of_batch(batch_id, self.max_owner_bytes)

    async def _reserve(self, batch: Batch, owner: str) -> None:
        """Record the batch's output and error files (incomplete) if they are not yet, each counting the bytes of
        its lines recorded so far (none, unless the batch began before its files were counted)."""
        files = self._output_files(batch.id)
        staged = await self._store.staged(batch.id)
        for ok, file_id, filename in ((True, files.output, "output"), (False, files.error, "error")):
            record = file_pb2.File(
                id=file_id,
                object="file",
                created_at=now(),
                filename=f"{batch.id}_{filename}.jsonl",
                purpose="batch_output",
                status="processed",
            )
            await self._files.reserve(record, owner, staged[ok])

    async def _write_files(self, batch: Batch, owner: str) -> tuple[str, str | None]:
        """The output file (the lines answered 200) and the error file (the others, if any), in input order: the
        bytes their lines counted when they were recorded."""
        files = self._output_files(batch.id)
        await self._reserve(batch, owner)
        for file_id in (files.output, files.error):
            await self._files.clear(file_id)  # what a finalisation interrupted by a restart wrote
        pending: dict[str, list[bytes]] = {files.output: [], files.error: []}
        written: set[str] = set()  # which of the two files got lines

        async def flush(file_id: str) -> None:
            if pending[file_id]:
                await self._files.fill(file_id, b"".join(pending[file_id]))
                pending[file_id].clear()

        after = 0
        while outputs := await self._store.outputs(batch.id, after=after, limit=READ_OUTPUTS):
            for output in outputs:
                file_id = files.holding(output.status)
                pending[file_id].append(output.text.encode() + b"\n")  # what line_bytes counted
                written.add(file_id)
                if sum(map(len, pending[file_id])) >= CHUNK_BYTES:
                    await flush(file_id)
            after = outputs[-1].number
        for file_id in pending:
            await flush(file_id)
        await self._files.complete(files.output)
        if files.error not in written:
            await self._files.delete(files.error, None)
            return files.output, None
        await self._files.complete(files.error)
        return files.output, files.error


def _count(batch: Batch, result: Result) -> None:
    """A line's result in the batch's counts and usage."""
    if result.status == 200:
        batch.request_counts.completed += 1
        body = (result.output.get("response") or {}).get("body") or {}
        add_usage(batch.usage, body)
    else:
        batch.request_counts.failed += 1


def _fail(batch: Batch, bound: int) -> None:
    """End the batch's lines: its files would pass the owner's ``bound`` on stored bytes (once: the first error)."""
    if batch.status not in ("in_progress", "cancelling") or batch.errors.data:
        return
    batch.status, batch.finalizing_at = "finalizing", now()
    batch.errors.object = "list"
    batch.errors.data.append(
        batch_pb2.BatchError(
            code=STORAGE_LIMIT,
            message=f"the batch's output and error files would take this key's files past {bound} bytes "
            f"({BYTES_FLAG}): they hold the lines recorded before that, and the lines after it did not run; delete "
            "files, then submit those lines again",
        )
    )


def _finalizing(batch: Batch) -> None:
    batch.status = "finalizing"
    if not batch.HasField("finalizing_at"):  # (_fail's stands)
        batch.finalizing_at = now()


def _set(batch: Batch, **fields: Any) -> None:
    for name, value in fields.items():
        setattr(batch, name, value)
