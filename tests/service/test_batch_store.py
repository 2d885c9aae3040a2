"""The batch store records many lines' results in one transaction, each line once, counted once; each result's
bytes count against its owner's bound on stored bytes, and a result that does not fit is not recorded."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ovserve.clients.v1 import batch_pb2, file_pb2
from ovserve.service.store.batches import BatchStore, OutputFiles, Result, line_bytes
from ovserve.service.store.files import FileStore, StorageFull
from ovserve.service.store.responses import ResponseStore


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
        assert outputs[1].text == '{"custom_id": "r2"}'  # the first result stands
        return first, again, written, none_left, await batches.get("batch_1", "owner"), [r.status for r in outputs]

    try:
        first, again, written, none_left, stored, statuses = asyncio.run(scenario())
    finally:
        store.close()
    assert (first, again, written, none_left) == (True, False, 4, 0)
    assert stored is not None
    assert (stored.request_counts.completed, stored.request_counts.failed) == (1, 4)
    assert statuses == [0, 200, 0, 0, 0]


def test_results_count_against_the_owner_s_bound_and_the_first_that_does_not_fit_ends_the_recording(
    tmp_path: Path,
) -> None:
    store = ResponseStore(tmp_path / "store.db")
    batches, files = BatchStore(store), FileStore(store)
    output = {"custom_id": "r", "body": "x" * 80}
    size = line_bytes('{"custom_id": "r", "body": "' + "x" * 80 + '"}')
    bound = 100 + 3 * size  # an upload of 100 bytes, and room for three results
    outputs = OutputFiles.of_batch("batch_1", bound)

    async def scenario() -> tuple[int, dict[bool, int], int, bool, bool]:
        upload = file_pb2.File(id="file-in", purpose="batch", created_at=1)
        await files.begin(upload, "owner", max_files=10)
        await files.append("file-in", b"u" * 100, max_owner_bytes=bound)
        await files.complete("file-in")
        await batches.create(batch_pb2.Batch(id="batch_1", status="in_progress"), "owner", [("r", "{}")] * 5)
        for file_id in (outputs.output, outputs.error):
            await files.reserve(file_pb2.File(id=file_id, purpose="batch_output", created_at=1), "owner", 0)
        await batches.record("batch_1", Result(1, 400, output), count, outputs)  # the error file counts too
        with pytest.raises(StorageFull, match=str(bound)):
            await batches.record_many("batch_1", [Result(n, 200, output) for n in range(2, 6)], count, outputs)
        with pytest.raises(StorageFull):  # the owner's upload meets the room the batch took
            await files.append("file-in", b"u", max_owner_bytes=bound)
        left = len(await batches.pending("batch_1", after=0, limit=10))
        reserved_deleted = await files.delete(outputs.output, "owner")  # not a client's to delete while it runs
        expired = await files.expire()  # nor an abandoned upload
        return left, await batches.staged("batch_1"), (await files.usage("owner")).bytes, reserved_deleted, expired

    try:
        left, staged, held, reserved_deleted, expired = asyncio.run(scenario())
    finally:
        store.close()
    assert left == 2  # lines 1 to 3 fit exactly; 4 would pass the bound, so neither it nor 5 is recorded
    assert staged == {True: 2 * size, False: size}
    assert held == bound
    assert (reserved_deleted, expired) == (False, 0)
