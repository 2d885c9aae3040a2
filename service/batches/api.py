"""BatchService semantics: batches created from uploaded input files, read, listed and cancelled per tenant.

``BatchesApi`` is the facade the servicer calls; the lines run in ``BatchRunner`` (service/batches/runner.py).
"""

from __future__ import annotations

import asyncio

from ovserve.clients.v1 import batch_pb2 as pb
from ovserve.service.api.files import expiry_violations
from ovserve.service.api.stored_chat import metadata_violations, page_bounds, page_reply
from ovserve.service.batches.lines import ENDPOINTS, endpoint_of, read_input
from ovserve.service.batches.runner import BatchRunner
from ovserve.service.errors import FieldViolation, InvalidArgument, NotFound, quote
from ovserve.service.ids import new_id, now
from ovserve.service.store.batches import BatchStore
from ovserve.service.store.files import FileStore
from ovserve.service.store.tenancy import tenant

#: OpenAI's one completion window, and what it means.
COMPLETION_WINDOW, WINDOW_SECONDS = "24h", 24 * 3600


class BatchesApi:
    """The Batch API over the batch and file stores."""

    def __init__(self, store: BatchStore, files: FileStore, runner: BatchRunner) -> None:
        self._store = store
        self._files = files
        self.runner = runner

    async def create(self, request: pb.CreateBatchRequest) -> pb.Batch:
        """CreateBatch: the input file read and checked now; its lines stored and run in the background."""
        endpoint = endpoint_of(request.endpoint)
        violations = metadata_violations(request.metadata)
        if endpoint is None:
            violations.append(
                FieldViolation("endpoint", f"must be one of {', '.join(ENDPOINTS)}; got {quote(request.endpoint)}")
            )
        if request.completion_window != COMPLETION_WINDOW:
            violations.append(
                FieldViolation(
                    "completion_window", f"must be {COMPLETION_WINDOW!r}; got {quote(request.completion_window)}"
                )
            )
        owner = tenant.get()
        found = await self._files.get(request.input_file_id, owner) if request.input_file_id else None
        if found is None:
            violations.append(FieldViolation("input_file_id", f"no file {quote(request.input_file_id)}"))
        elif found.purpose != "batch":
            violations.append(FieldViolation("input_file_id", f"the file's purpose is {found.purpose!r}, not 'batch'"))
        if request.HasField("output_expires_after"):
            violations += expiry_violations(request.output_expires_after, "output_expires_after")
        InvalidArgument.check(violations)
        assert endpoint is not None and found is not None
        data = b"".join([chunk async for chunk in self._files.chunks(found.id)])
        read = await asyncio.to_thread(read_input, data, endpoint)
        created = now()
        batch = pb.Batch(
            id=new_id("batch_"), object="batch", endpoint=endpoint, model=read.model, input_file_id=found.id,
            completion_window=COMPLETION_WINDOW, created_at=created, expires_at=created + WINDOW_SECONDS,
            metadata=request.metadata,
        )  # fmt: skip
        if request.HasField("output_expires_after"):  # its files' expiry, set when the batch writes them
            batch.output_expires_after.CopyFrom(request.output_expires_after)
        if read.errors:
            batch.status, batch.failed_at = "failed", created
            batch.errors.object = "list"
            batch.errors.data.extend(read.errors)
            await self._store.create(batch, owner, [])
            return batch
        batch.status, batch.in_progress_at = "in_progress", created
        batch.request_counts.total = len(read.lines)
        await self._store.create(batch, owner, read.lines)
        self.runner.launch(batch.id, owner)
        return batch

    async def get(self, batch_id: str) -> pb.Batch:
        """GetBatch."""
        found = await self._store.get(batch_id, tenant.get()) if batch_id else None
        if found is None:
            raise _not_found(batch_id)
        return found

    async def list(self, request: pb.ListBatchesRequest) -> pb.ListBatchesResponse:
        """ListBatches: newest first."""
        limit, _ = page_bounds(request, default_order="desc")
        after = request.after if request.HasField("after") else None
        try:
            page = await self._store.page(tenant.get(), after=after, limit=limit)
        except KeyError:
            raise InvalidArgument.of("after", f"no batch {quote(after)}") from None
        return page_reply(pb.ListBatchesResponse, page.batches, page.has_more)

    async def cancel(self, batch_id: str) -> pb.Batch:
        """CancelBatch: no new line starts; the runner writes the files and ends the batch "cancelled"."""
        owner = tenant.get()
        await self.get(batch_id)

        def cancelling(batch: pb.Batch) -> None:
            if batch.status in ("validating", "in_progress"):
                batch.status, batch.cancelling_at = "cancelling", now()

        batch = await self._store.change(batch_id, cancelling)
        if batch.status == "cancelling":
            self.runner.launch(batch_id, owner)  # it ends a batch whose lines no longer run at once
        return batch


def _not_found(batch_id: str) -> NotFound:
    return NotFound(f"no batch {quote(batch_id)}", param="batch_id")
