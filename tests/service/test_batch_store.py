"""The batch store records many lines' results in one transaction, each line once, counted once."""

from __future__ import annotations

import asyncio
from pathlib import Path

from clients.v1 import batch_pb2
from service.store.batches import BatchStore, Result
from service.store.responses import ResponseStore


def count(batch: batch_pb2.Batch, result: Result) -> None:
    if result.status == 200:
        batch.request_counts.completed += 1
    else:
        batch.request_counts.failed += 1


def test_many_results_in_one_call_skip_the_lines_already_recorded(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path / "store.db")
    batches = BatchStore(store)

    async def scenario() -> tuple[bool, bool, int, int, batch_pb2.Batch | None, list[int]]:
        batch = batch_pb2.Batch(id="batch_1", status="in_progress", created_at=1)
        batch.request_counts.total = 5
        await batches.create(batch, "owner", [(f"r{i}", "{}") for i in range(1, 6)])
        first = await batches.record("batch_1", Result(2, 200, {"custom_id": "r2"}), count)
        again = await batches.record("batch_1", Result(2, 200, {"custom_id": "r2", "twice": True}), count)
        unrun = [Result(number, 0, {"custom_id": f"r{number}"}) for number in range(1, 6)]
        written = await batches.record_many("batch_1", unrun, count)
        none_left = await batches.record_many("batch_1", unrun, count)
        assert await batches.pending("batch_1", after=0, limit=10) == []
        outputs = await batches.outputs("batch_1", after=0, limit=10)
        assert outputs[1].output == {"custom_id": "r2"}  # the first result stands
        return first, again, written, none_left, await batches.get("batch_1", "owner"), [r.status for r in outputs]

    try:
        first, again, written, none_left, stored, statuses = asyncio.run(scenario())
    finally:
        store.close()
    assert (first, again, written, none_left) == (True, False, 4, 0)
    assert stored is not None
    assert (stored.request_counts.completed, stored.request_counts.failed) == (1, 4)
    assert statuses == [0, 200, 0, 0, 0]
