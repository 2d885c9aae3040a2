"""The Batch API: OpenAI's /batches (create, list), /batches/{id} and /batches/{id}/cancel over BatchService."""

from __future__ import annotations

from typing import Any

from ovserve.clients.v1 import batch_pb2 as pb
from ovserve.rest_bridge.handler import BridgeHandler, JsonBodyHandler
from ovserve.rest_bridge.translate.message import message_from_body
from ovserve.rest_bridge.translate.proto_json import without_nulls
from ovserve.rest_bridge.translate.query import MAX_LIMIT, integer, query_strings

# Batch's optional times.
_TIMES = (
    "in_progress_at", "expires_at", "finalizing_at", "completed_at", "failed_at", "expired_at", "cancelling_at",
    "cancelled_at",
)  # fmt: skip


def create_request(body: dict[str, Any]) -> pb.CreateBatchRequest:
    """POST /batches with OpenAI's CreateBatchRequest."""
    return message_from_body(
        body,
        pb.CreateBatchRequest,
        without_nulls,
        allowed={"input_file_id", "endpoint", "completion_window", "metadata", "output_expires_after"},
    )


def batch_object(batch: pb.Batch) -> dict[str, Any]:
    """OpenAI's Batch object."""
    counts = batch.request_counts
    usage = batch.usage
    rendered: dict[str, Any] = {
        "id": batch.id,
        "object": "batch",
        "endpoint": batch.endpoint,
        "model": batch.model or None,
        "errors": {
            "object": "list",
            "data": [
                {
                    "code": error.code,
                    "message": error.message,
                    "param": error.param if error.HasField("param") else None,
                    "line": error.line if error.HasField("line") else None,
                }
                for error in batch.errors.data
            ],
        }
        if batch.errors.data
        else None,
        "input_file_id": batch.input_file_id,
        "completion_window": batch.completion_window,
        "status": batch.status,
        "output_file_id": batch.output_file_id if batch.HasField("output_file_id") else None,
        "error_file_id": batch.error_file_id if batch.HasField("error_file_id") else None,
        "created_at": batch.created_at,
        **{name: getattr(batch, name) if batch.HasField(name) else None for name in _TIMES},
        "request_counts": {"total": counts.total, "completed": counts.completed, "failed": counts.failed},
        "usage": {
            "input_tokens": usage.input_tokens,
            "input_tokens_details": {"cached_tokens": usage.input_tokens_details.cached_tokens},
            "output_tokens": usage.output_tokens,
            "output_tokens_details": {"reasoning_tokens": usage.output_tokens_details.reasoning_tokens},
            "total_tokens": usage.total_tokens,
        },
        "metadata": dict(batch.metadata) or None,
    }
    # What is not set is left out (OpenAI's schema types these fields without null).
    return {name: value for name, value in rendered.items() if value is not None}


def _batch(reply: Any) -> dict[str, Any]:
    return batch_object(reply.batch)


def _batch_list(reply: pb.ListBatchesResponse) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [batch_object(batch) for batch in reply.data],
        "first_id": reply.first_id,
        "last_id": reply.last_id,
        "has_more": reply.has_more,
    }


def list_request(query: dict[str, list[bytes]]) -> pb.ListBatchesRequest:
    """GET /batches' query: ``after``, ``limit`` (1-100)."""
    values = query_strings(query, {"after", "limit"}, ())
    request = pb.ListBatchesRequest()
    if "after" in values:
        request.after = values["after"][0]
    if "limit" in values:
        request.limit = integer("limit", values["limit"][0], 1, MAX_LIMIT)
    return request


class BatchesHandler(JsonBodyHandler):
    """POST (create) and GET (list) /v3/batches."""

    async def post(self) -> None:
        request = await self.translated(create_request)
        await self.answer(self.backend.batches.CreateBatch, request, _batch)

    async def get(self) -> None:
        await self.answer(self.backend.batches.ListBatches, list_request(self.request.query_arguments), _batch_list)


class BatchHandler(BridgeHandler):
    """GET /v3/batches/{id}."""

    async def get(self, batch_id: str) -> None:
        query_strings(self.request.query_arguments, (), ())
        await self.answer(self.backend.batches.GetBatch, pb.GetBatchRequest(batch_id=batch_id), _batch)


class CancelBatchHandler(BridgeHandler):
    """POST /v3/batches/{id}/cancel."""

    async def post(self, batch_id: str) -> None:
        await self.answer(self.backend.batches.CancelBatch, pb.CancelBatchRequest(batch_id=batch_id), _batch)


# Batch ids ("batch_...") have no "/".
ROUTES = [
    ("/batches", BatchesHandler),
    ("/batches/([^/]+)", BatchHandler),
    ("/batches/([^/]+)/cancel", CancelBatchHandler),
]
