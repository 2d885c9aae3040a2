"""/chat/completions: create (JSON, or SSE with ``"stream": true``) and OpenAI's stored chat completions.

POST creates; GET lists the stored ones; GET/POST/DELETE /chat/completions/{id} reads, updates the metadata of,
and deletes one; GET /chat/completions/{id}/messages lists its request messages. A request in the deprecated
functions form gets its reply in that form too (``legacy_functions``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ovserve.clients.v1 import chat_pb2
from ovserve.rest_bridge import legacy_functions
from ovserve.rest_bridge.handler import BridgeHandler, JsonBodyHandler
from ovserve.rest_bridge.render.chat import chat_chunk, chat_completion, page, stored_completion, stored_message
from ovserve.rest_bridge.sse import ChunkFraming
from ovserve.rest_bridge.translate.body import bad_request
from ovserve.rest_bridge.translate.completions import chat_request, uses_functions
from ovserve.rest_bridge.translate.proto_json import check_arguments
from ovserve.rest_bridge.translate.query import Query

_METADATA_KEY = re.compile(r"metadata\[(.*)\]", re.DOTALL)


def _same(payload: dict[str, Any]) -> dict[str, Any]:
    return payload


# ---- query strings and bodies of the stored-completion routes ----


def _query(query: Query, allowed: set[str]) -> tuple[dict[str, str], dict[str, str]]:
    """Plain query values by name and ``metadata[key]`` values by key; unknown or repeated names are a 400."""
    values: dict[str, str] = {}
    metadata: dict[str, str] = {}
    for name, raw in query.items():
        if len(raw) > 1:
            raise bad_request(name, f"query parameter {name} is given more than once")
        value = raw[0].decode("utf-8", "replace")
        if key := _METADATA_KEY.fullmatch(name):
            if "metadata" not in allowed:
                raise bad_request(name, f"Unrecognized query parameter supplied: {name}")
            metadata[key.group(1)] = value
        elif name in allowed:
            values[name] = value
        else:
            raise bad_request(name, f"Unrecognized query parameter supplied: {name}")
    return values, metadata


def _paging(request: Any, values: dict[str, str]) -> None:
    """Copy after / limit / order onto a list request (the service checks their ranges)."""
    if "after" in values:
        request.after = values["after"]
    if "order" in values:
        request.order = values["order"]
    if "limit" in values:
        text = values["limit"]
        if not re.fullmatch(r"-?\d{1,9}", text):
            raise bad_request("limit", f"limit must be an integer, got {text!r}")
        request.limit = int(text)


def list_request(query: Query) -> chat_pb2.ListChatCompletionsRequest:
    """GET /chat/completions?model=&metadata[k]=v&after=&limit=&order=."""
    values, metadata = _query(query, {"model", "metadata", "after", "limit", "order"})
    request = chat_pb2.ListChatCompletionsRequest(metadata=metadata)
    if "model" in values:
        request.model = values["model"]
    _paging(request, values)
    return request


def update_request(completion_id: str, body: dict[str, Any]) -> chat_pb2.UpdateChatCompletionRequest:
    """POST /chat/completions/{id} with ``{"metadata": {...}}`` (null clears it)."""
    check_arguments(sorted(body), {"metadata"})
    if "metadata" not in body:
        raise bad_request("metadata", "Missing required parameter: 'metadata'.")
    metadata = body["metadata"] or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise bad_request("metadata", f"metadata must be an object of strings, got {json.dumps(metadata)[:100]}")
    return chat_pb2.UpdateChatCompletionRequest(completion_id=completion_id, metadata=metadata)


# ---- handlers ----


class ChatCompletionsHandler(JsonBodyHandler):
    """POST /v3/chat/completions (create) and GET /v3/chat/completions (list stored ones)."""

    async def post(self) -> None:
        request, stream, legacy = await self.translated(lambda body: (*chat_request(body), uses_functions(body)))
        # A request in the deprecated functions form gets its reply in that form too.
        as_chunk = legacy_functions.chunk if legacy else _same
        as_reply = legacy_functions.reply if legacy else _same
        if stream:
            include_usage = request.stream_options.include_usage
            call = self.backend.chat.StreamChatCompletion(request, **self.grpc_options())
            await self.relay(call, ChunkFraming(lambda chunk: as_chunk(chat_chunk(chunk, include_usage))))
        else:
            await self.answer(self.backend.chat.CreateChatCompletion, request, lambda r: as_reply(chat_completion(r)))

    async def get(self) -> None:
        request = list_request(self.request.query_arguments)
        await self.answer(self.backend.chat.ListChatCompletions, request, _completion_page)


class StoredChatCompletionHandler(JsonBodyHandler):
    """GET, POST (update metadata) and DELETE /v3/chat/completions/{id}."""

    async def get(self, completion_id: str) -> None:
        _query(self.request.query_arguments, set())
        request = chat_pb2.GetChatCompletionRequest(completion_id=completion_id)
        await self.answer(self.backend.chat.GetChatCompletion, request, _stored)

    async def post(self, completion_id: str) -> None:
        request = await self.translated(lambda body: update_request(completion_id, body))
        await self.answer(self.backend.chat.UpdateChatCompletion, request, _stored)

    async def delete(self, completion_id: str) -> None:
        request = chat_pb2.DeleteChatCompletionRequest(completion_id=completion_id)
        await self.answer(self.backend.chat.DeleteChatCompletion, request, _deleted)


class StoredChatMessagesHandler(BridgeHandler):
    """GET /v3/chat/completions/{id}/messages?after=&limit=&order=."""

    async def get(self, completion_id: str) -> None:
        values, _ = _query(self.request.query_arguments, {"after", "limit", "order"})
        request = chat_pb2.ListChatCompletionMessagesRequest(completion_id=completion_id)
        _paging(request, values)
        await self.answer(self.backend.chat.ListChatCompletionMessages, request, _message_page)


def _completion_page(reply: chat_pb2.ListChatCompletionsResponse) -> dict[str, Any]:
    return page([stored_completion(completion) for completion in reply.data], reply)


def _message_page(reply: chat_pb2.ListChatCompletionMessagesResponse) -> dict[str, Any]:
    return page([stored_message(message) for message in reply.data], reply)


def _stored(reply: chat_pb2.GetChatCompletionResponse | chat_pb2.UpdateChatCompletionResponse) -> dict[str, Any]:
    return stored_completion(reply.completion)


def _deleted(reply: chat_pb2.DeleteChatCompletionResponse) -> dict[str, Any]:
    return {"object": reply.object, "id": reply.id, "deleted": reply.deleted}


# Completion ids ("chatcmpl-...") have no "/".
ROUTES = [
    ("/chat/completions", ChatCompletionsHandler),
    ("/chat/completions/([^/]+)", StoredChatCompletionHandler),
    ("/chat/completions/([^/]+)/messages", StoredChatMessagesHandler),
]
