"""POST /v3/embeddings (OpenAI's), /v3/rerank (Cohere's, as OVMS and vLLM take it) and /v3/score (vLLM's).

Each body becomes its proto request through the same checks as every other route (unknown fields and wrong
types are a 400 naming the field); the replies are written in the JSON each API's clients read.
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

from clients.polymorphic import json_type
from clients.v1 import embedding_pb2, rerank_pb2
from rest_bridge.handlers import JsonBodyHandler
from rest_bridge.requests import bad_request, check_arguments, normalise_forms, to_message


def embedding_request(body: dict[str, Any]) -> embedding_pb2.CreateEmbeddingRequest:
    """The proto request for an OpenAI embeddings body."""
    descriptor = embedding_pb2.CreateEmbeddingRequest.DESCRIPTOR
    check_arguments(body, descriptor)
    proto_json = normalise_forms({key: value for key, value in body.items() if value is not None}, descriptor)
    return to_message(proto_json, embedding_pb2.CreateEmbeddingRequest)


def embedding_json(reply: embedding_pb2.CreateEmbeddingResponse, encoding_format: str) -> dict[str, Any]:
    """OpenAI's embeddings list; with base64, each vector as its little-endian float32 bytes."""

    def vector(item: embedding_pb2.Embedding) -> list[float] | str:
        if encoding_format == "base64":
            return base64.b64encode(np.asarray(item.embedding, dtype="<f4").tobytes()).decode("ascii")
        return list(item.embedding)

    return {
        "object": "list",
        "data": [{"object": "embedding", "index": item.index, "embedding": vector(item)} for item in reply.data],
        "model": reply.model,
        "usage": {"prompt_tokens": reply.usage.prompt_tokens, "total_tokens": reply.usage.total_tokens},
    }


def _as_list(body: dict[str, Any], key: str, wrap: Any) -> None:
    """A string (or object) where the proto takes a list of them: the one-element list."""
    value = body.get(key)
    if value is not None and not isinstance(value, list):
        if not isinstance(value, str):
            raise bad_request(key, f"{key} must be a string or a list of strings, got {json_type(value)}")
        body[key] = [wrap(value)]


def rerank_request(body: dict[str, Any]) -> rerank_pb2.RerankRequest:
    """The proto request for a rerank body: documents as strings or ``{"text": ...}`` objects."""
    check_arguments(body, rerank_pb2.RerankRequest.DESCRIPTOR)
    body = {key: value for key, value in body.items() if value is not None}
    documents = body.get("documents")
    if isinstance(documents, list):
        body["documents"] = [{"text": item} if isinstance(item, str) else item for item in documents]
    return to_message(body, rerank_pb2.RerankRequest)


def score_request(body: dict[str, Any]) -> rerank_pb2.ScoreRequest:
    """The proto request for a vLLM score body: text_1 and text_2 each a string or a list of strings."""
    check_arguments(body, rerank_pb2.ScoreRequest.DESCRIPTOR)
    body = {key: value for key, value in body.items() if value is not None}
    for key in ("text_1", "text_2"):
        _as_list(body, key, str)
    return to_message(body, rerank_pb2.ScoreRequest)


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


class EmbeddingsHandler(JsonBodyHandler):
    """POST /v3/embeddings."""

    async def post(self) -> None:
        request = await self.translated(embedding_request)
        reply = await self.unary(self.backend.embeddings.CreateEmbedding, request)
        self.write_json(embedding_json(reply, request.encoding_format))


class RerankHandler(JsonBodyHandler):
    """POST /v3/rerank."""

    async def post(self) -> None:
        request = await self.translated(rerank_request)
        self.write_json(rerank_json(await self.unary(self.backend.rerank.Rerank, request)))


class ScoreHandler(JsonBodyHandler):
    """POST /v3/score."""

    async def post(self) -> None:
        request = await self.translated(score_request)
        self.write_json(score_json(await self.unary(self.backend.rerank.Score, request)))


ROUTES = [("/embeddings", EmbeddingsHandler), ("/rerank", RerankHandler), ("/score", ScoreHandler)]
