"""The batch runner: each batch's lines run in the background, behind interactive calls, and survive a restart.

Lines run through a ``LineExecutor``: the request as an HTTP client would send it, answered as the REST API
answers it (the composition root gives the bridge's own translation and rendering, calling this server over
gRPC as the batch's owner). Lines give way to interactive calls (the ones that generate): at most
``concurrency`` run at once over all batches, one while interactive calls generate or did within
INTERACTIVE_HOLD_SECONDS, and none starts while an interactive call began less than ARRIVING_SECONDS ago (its
prompt is read then: its first token is what a batch would delay). When an interactive call begins, the lines
whose requests run are cancelled (``give_way``) and run again later, so its first token does not wait behind
them: the engine drops their sequences at its next step, and the server's event loop stops translating and
rendering them. A line is cancelled so at most MAX_PREEMPTIONS times, then runs to its end; and a runner that
had no line running for STARVED_SECONDS starts one anyway, so a steady interactive load slows a batch but never
stops it. Each result is stored
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
import collections
import contextlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ovserve.clients.defaults import MIB
from ovserve.clients.v1 import batch_pb2, file_pb2
from ovserve.service.batches.lines import add_usage, output_line, unrun_line
from ovserve.service.ids import now
from ovserve.service.store.batches import Batch, BatchStore, Line, OutputFiles, Result
from ovserve.service.store.files import BYTES_FLAG, FileStore, StorageFull
from ovserve.service.store.tenancy import tenant

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
#: How long after an interactive call began no line starts (while it runs): it reads its prompt then.
ARRIVING_SECONDS = 1.0
#: How often one line may be cancelled for an interactive call before it is let run to its end.
MAX_PREEMPTIONS = 3
#: How long a runner with lines to run but none running waits for the interactive load to leave room.
STARVED_SECONDS = 5.0
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


@dataclass(eq=False)  # (held in a set, by identity)
class _Run:
    """A line under way: ``give_way`` may cancel it while its request runs (``calling``), to run again."""

    line: Line
    preemptions: int = 0  # how often it was cancelled so before
    task: asyncio.Task[None] | None = None
    calling: bool = False
    preempted: bool = False


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
        arriving: Callable[[float], bool] = lambda seconds: False,
    ) -> None:
        """``max_owner_bytes``: what an owner's files may take, batches' output and error files included;
        ``interactive(seconds)``: whether interactive calls generate now or did within ``seconds``;
        ``arriving(seconds)``: whether one that began less than ``seconds`` ago runs (the runner gives way to
        them; ``give_way`` is to be called as each begins)."""
        self._store = store
        self._files = files
        self.max_owner_bytes = max_owner_bytes
        self.concurrency = concurrency
        self._interactive = interactive
        self._arriving = arriving
        self._executor: LineExecutor | None = None
        self._running = 0
        self._runs: set[_Run] = set()  # lines under way, over all batches
        self._idle_since = time.monotonic()  # when the last line under way ended (none runs since)
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

    def give_way(self) -> None:
        """An interactive call begins: cancel the lines whose requests run (each to run again later), but for
        those cancelled MAX_PREEMPTIONS times already."""
        for run in self._runs:
            if run.calling and not run.preempted and run.preemptions < MAX_PREEMPTIONS and run.task is not None:
                run.preempted = True
                run.task.cancel()

    async def _lines(self, batch: Batch, owner: str) -> None:
        """Run every line without a result, in order, until none is left or the batch is cancelled or expired."""
        running: set[asyncio.Task[None]] = set()
        queue: collections.deque[_Run] = collections.deque()  # lines read, and lines given way, to run next
        after, read_all = 0, False
        try:
            while True:
                if not queue and not read_all:
                    lines = await self._store.pending(batch.id, after=after, limit=READ_LINES)
                    queue.extend(_Run(line) for line in lines)
                    after, read_all = (lines[-1].number if lines else after), not lines
                if not queue:
                    if not running:
                        return
                    await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)  # one may give way
                    continue
                await self._take_room()
                current = await self._store.get(batch.id, None)
                if current is None or current.status != "in_progress" or time.time() >= current.expires_at:
                    self._give_room()
                    return
                run = queue.popleft()
                run.task = asyncio.create_task(self._line(batch, run, owner, queue.appendleft))
                running.add(run.task)
                run.task.add_done_callback(running.discard)
        except asyncio.CancelledError:  # the server stops: lines under way end unrecorded, to run again
            for task in running:
                task.cancel()
            raise
        finally:
            if running:
                await asyncio.gather(*running, return_exceptions=True)

    async def _line(self, batch: Batch, run: _Run, owner: str, again: Callable[[_Run], None]) -> None:
        """Run a line and record its result; if it gives way to an interactive call, ``again`` queues it."""
        assert self._executor is not None  # launch() runs batches only then
        line = run.line
        self._runs.add(run)
        try:
            for attempt in range(RETRIES + 1):
                run.calling = True
                try:
                    status, request_id, body = await self._executor(batch.endpoint, json.loads(line.body), owner)
                except asyncio.CancelledError:
                    if not run.preempted:
                        raise
                    asyncio.current_task().uncancel()  # type: ignore[union-attr]  # (a task runs this)
                    again(_Run(line, run.preemptions + 1))
                    return
                finally:
                    run.calling = False
                if status not in RETRIED or attempt == RETRIES:
                    break
                await asyncio.sleep(RETRY_SECONDS * 2**attempt)
            result = Result(line.number, status, output_line(line.custom_id, status, request_id, body))
            try:
                await self._store.record(batch.id, result, _count, self._output_files(batch.id))
            except StorageFull:  # no line starts after this one (the batch is no longer in progress)
                await self._store.change(batch.id, lambda stored: _fail(stored, self.max_owner_bytes))
        finally:
            self._runs.discard(run)
            self._give_room()

    async def _take_room(self) -> None:
        """Wait for a place: ``concurrency`` lines at most, one while interactive calls generate, none while one
        has just begun (unless none ran for STARVED_SECONDS)."""
        while self._running >= self._room():
            self._freed.clear()
            with contextlib.suppress(TimeoutError):  # the interactive load is looked at again meanwhile
                await asyncio.wait_for(self._freed.wait(), GATE_SECONDS)
        self._running += 1

    def _room(self) -> int:
        """How many lines may run now, beside the interactive load."""
        if self._arriving(ARRIVING_SECONDS):
            return 1 if time.monotonic() - self._idle_since >= STARVED_SECONDS else 0
        return 1 if self._interactive(INTERACTIVE_HOLD_SECONDS) else self.concurrency

    def _give_room(self) -> None:
        self._running -= 1
        if not self._running:
            self._idle_since = time.monotonic()
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
        pending = {files.output: bytearray(), files.error: bytearray()}  # each file's next chunk
        written: set[str] = set()  # which of the two files got lines

        async def flush(file_id: str) -> None:
            if pending[file_id]:
                await self._files.fill(file_id, bytes(pending[file_id]))
                pending[file_id].clear()

        after = 0
        while outputs := await self._store.outputs(batch.id, after=after, limit=READ_OUTPUTS):
            for output in outputs:
                file_id = files.holding(output.status)
                pending[file_id] += output.text.encode() + b"\n"  # what line_bytes counted
                written.add(file_id)
                if len(pending[file_id]) >= CHUNK_BYTES:
                    await flush(file_id)
            after = outputs[-1].number
        for file_id in pending:
            await flush(file_id)
        # OpenAI's output_expires_after counts from the files' creation: now, as they are written
        expires = batch.output_expires_after.seconds if batch.HasField("output_expires_after") else None
        await self._files.complete(files.output, expires_after=expires)
        if files.error not in written:
            await self._files.delete(files.error, None)
            return files.output, None
        await self._files.complete(files.error, expires_after=expires)
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
