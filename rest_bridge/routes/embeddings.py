"""POST /embeddings: OpenAI's embeddings over EmbeddingService (floats, or base64 of little-endian float32)."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

from ovserve.clients.v1 import embedding_pb2
from ovserve.rest_bridge.handler import JsonBodyHandler
from ovserve.rest_bridge.translate.body import bad_request
from ovserve.rest_bridge.translate.message import message_from_body
from ovserve.rest_bridge.translate.proto_json import normalise_forms, without_nulls


def _normalise(body: dict[str, Any]) -> dict[str, Any]:
    # The proto's empty encoding_format is its default (float), as proto3 cannot tell it from unset; in JSON the
    # default is said by leaving it out, and OpenAI refuses "". Other values are the service's to refuse.
    if body.get("encoding_format") == "":
        raise bad_request("encoding_format", "'' is not an encoding: float or base64 (or leave it out for float)")
    return normalise_forms(without_nulls(body), embedding_pb2.CreateEmbeddingRequest.DESCRIPTOR)


def embedding_request(body: dict[str, Any]) -> embedding_pb2.CreateEmbeddingRequest:
    """The proto request for an OpenAI embeddings body (``input``: a string, strings, or token arrays)."""
    return message_from_body(body, embedding_pb2.CreateEmbeddingRequest, _normalise)


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


class EmbeddingsHandler(JsonBodyHandler):
    """POST /v3/embeddings."""

    async def post(self) -> None:
        request = await self.translated(embedding_request)
        encoding = request.encoding_format
        await self.answer(
            self.backend.embeddings.CreateEmbedding, request, lambda reply: embedding_json(reply, encoding)
        )


ROUTES = [("/embeddings", EmbeddingsHandler)]
