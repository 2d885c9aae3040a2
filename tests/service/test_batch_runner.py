"""The batch runner gives way to interactive calls: the lines whose requests run when one begins are cancelled
and run again (each recorded once, in input order), none starts while it is arriving, and a line cancelled
MAX_PREEMPTIONS times runs to its end (a steady interactive load slows a batch, never stops it)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from ovserve.clients.v1 import batch_pb2
from ovserve.service.batches.runner import MAX_PREEMPTIONS, BatchRunner
from ovserve.service.ids import now
from ovserve.service.store.batches import BatchStore, OutputFiles
from ovserve.service.store.files import FileStore
from ovserve.service.store.responses import ResponseStore

POLLS = 400  # of 10 ms: how long a scenario waits for the runner at most


class Lines:
    """An executor whose requests run until ``release`` is set; ``calls``: the lines it was asked, in order."""

    def __init__(self, pad: int = 0) -> None:
        self.calls: list[int] = []
        self.release = asyncio.Event()
        self.pad = pad  # characters added to each answer

    async def __call__(self, endpoint: str, body: dict[str, Any], owner: str) -> tuple[int, str, dict[str, Any]]:
        self.calls.append(body["n"])
        await self.release.wait()
        return 200, f"req-{body['n']}", {"n": body["n"], "pad": "é" * self.pad}

    async def close(self) -> None:
        pass


async def until(condition: Any) -> None:
    for _ in range(POLLS):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the runner did not get there")


def run_batch(lines: int, concurrency: int, steps: Any, pad: int = 0) -> tuple[list[int], batch_pb2.Batch, list[int]]:
    """Run a batch of ``lines`` with ``steps(runner, executor, arriving)`` acting meanwhile; the lines called,
    the batch as it ended, and the lines of its output file."""
    store = ResponseStore(None)
    batches, files = BatchStore(store), FileStore(store)
    arriving = {"now": False}
    runner = BatchRunner(
        batches, files, concurrency=concurrency, max_owner_bytes=2**40, arriving=lambda _: arriving["now"]
    )

    async def scenario() -> tuple[list[int], batch_pb2.Batch, list[int]]:
        created = now()
        batch = batch_pb2.Batch(id="batch_x", status="in_progress", endpoint="/v1/embeddings", expires_at=created + 60)
        await batches.create(batch, "", [(f"c{n}", json.dumps({"n": n})) for n in range(lines)])
        executor = Lines(pad)
        await runner.start(executor)
        await steps(runner, executor, arriving)
        executor.release.set()
        done: list[batch_pb2.Batch] = []

        async def ended() -> None:
            stored = await batches.get("batch_x", None)
            assert stored is not None
            done.append(stored)

        for _ in range(POLLS):
            await ended()
            if done[-1].status == "completed":
                break
            await asyncio.sleep(0.01)
        output_id = OutputFiles.of_batch("batch_x", 0).output
        output = b"".join([chunk async for chunk in files.chunks(output_id)])
        stored = await files.get(output_id, "")
        assert stored is not None and stored.bytes == len(output)  # what its lines counted is what it holds
        await runner.close()
        numbers = [json.loads(line)["response"]["body"]["n"] for line in output.splitlines()]
        return executor.calls, done[-1], numbers

    try:
        return asyncio.run(scenario())
    finally:
        store.close()


def test_the_lines_under_way_give_way_and_run_again_once_the_interactive_call_has_arrived() -> None:
    async def steps(runner: BatchRunner, executor: Lines, arriving: dict[str, bool]) -> None:
        await until(lambda: executor.calls == [0, 1])
        arriving["now"] = True
        runner.give_way()  # an interactive call begins: both lines are cancelled
        await asyncio.sleep(0.2)  # (four times the runner's GATE_SECONDS)
        assert executor.calls == [0, 1]  # and none starts while it arrives
        arriving["now"] = False

    calls, batch, outputs = run_batch(4, 2, steps)
    assert calls[:2] == [0, 1] and sorted(calls[2:]) == [0, 1, 2, 3]
    assert batch.status == "completed" and batch.request_counts.completed == 4
    assert outputs == [0, 1, 2, 3]  # each once, in input order


def test_a_line_cancelled_max_preemptions_times_runs_to_its_end() -> None:
    async def steps(runner: BatchRunner, executor: Lines, arriving: dict[str, bool]) -> None:
        for runs in range(1, MAX_PREEMPTIONS + 1):
            await until(lambda runs=runs: len(executor.calls) == runs)
            runner.give_way()
        await until(lambda: len(executor.calls) == MAX_PREEMPTIONS + 1)
        runner.give_way()  # not cancelled again
        await asyncio.sleep(0.05)

    calls, batch, outputs = run_batch(1, 1, steps)
    assert calls == [0] * (MAX_PREEMPTIONS + 1)
    assert batch.status == "completed" and outputs == [0]


def test_an_output_file_of_several_chunks_holds_what_its_lines_counted() -> None:
    async def steps(runner: BatchRunner, executor: Lines, arriving: dict[str, bool]) -> None:
        pass

    _, batch, outputs = run_batch(5, 4, steps, pad=300_000)  # 600 KB a line (two bytes a character)
    assert batch.status == "completed" and outputs == [0, 1, 2, 3, 4]
