"""POST /rerank (Cohere's, as OVMS and vLLM take it) and /score (vLLM's) over RerankService.

Each body becomes its proto request through the same checks as every other route (unknown fields and wrong
types are a 400 naming the field); the replies are written in the JSON each API's clients read.
"""

from __future__ import annotations

from typing import Any

from ovserve.clients.polymorphic import json_type
from ovserve.clients.v1 import rerank_pb2
from ovserve.rest_bridge.handler import JsonBodyHandler
from ovserve.rest_bridge.translate.body import bad_request
from ovserve.rest_bridge.translate.message import message_from_body
from ovserve.rest_bridge.translate.proto_json import without_nulls


def _documents_as_objects(body: dict[str, Any]) -> dict[str, Any]:
    body = without_nulls(body)
    documents = body.get("documents")
    if isinstance(documents, list):
        body["documents"] = [{"text": item} if isinstance(item, str) else item for item in documents]
    return body


def rerank_request(body: dict[str, Any]) -> rerank_pb2.RerankRequest:
    """The proto request for a rerank body: documents as strings or ``{"text": ...}`` objects."""
    return message_from_body(body, rerank_pb2.RerankRequest, _documents_as_objects)


def _texts_as_lists(body: dict[str, Any]) -> dict[str, Any]:
    """text_1 and text_2 as lists: a string is the one-element list."""
    body = without_nulls(body)
    for key in ("text_1", "text_2"):
        value = body.get(key)
        if value is not None and not isinstance(value, list):
            if not isinstance(value, str):
                raise bad_request(key, f"{key} must be a string or a list of strings, got {json_type(value)}")
            body[key] = [value]
    return body


def score_request(body: dict[str, Any]) -> rerank_pb2.ScoreRequest:
    """The proto request for a vLLM score body: text_1 and text_2 each a string or a list of strings."""
    return message_from_body(body, rerank_pb2.ScoreRequest, _texts_as_lists)


def rerank_json(reply: rerank_pb2.RerankResponse) -> dict[str, Any]:
    """The rerank reply as vLLM and OVMS write it (Cohere's results, usage in tokens)."""
    results = []
    for result in reply.results:
        item: dict[str, Any] = {"index": result.index, "relevance_score": result.relevance_score}
        if result.HasField("document"):
            item["document"] = {"text": result.document.text}
        results.append(item)
    usage = {"total_tokens": reply.usage.total_tokens}
    return {"id": reply.id, "model": reply.model, "results": results, "usage": usage}


def score_json(reply: rerank_pb2.ScoreResponse) -> dict[str, Any]:
    """vLLM's score reply."""
    return {
        "id": reply.id,
        "object": "list",
        "created": reply.created,
        "model": reply.model,
        "data": [{"index": item.index, "object": "score", "score": item.score} for item in reply.data],
        "usage": {"prompt_tokens": reply.usage.total_tokens, "total_tokens": reply.usage.total_tokens},
    }


class RerankHandler(JsonBodyHandler):
    """POST /v3/rerank."""

    async def post(self) -> None:
        await self.answer(self.backend.rerank.Rerank, await self.translated(rerank_request), rerank_json)


class ScoreHandler(JsonBodyHandler):
    """POST /v3/score."""

    async def post(self) -> None:
        await self.answer(self.backend.rerank.Score, await self.translated(score_request), score_json)


ROUTES = [("/rerank", RerankHandler), ("/score", ScoreHandler)]
