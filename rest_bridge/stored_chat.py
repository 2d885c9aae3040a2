"""Stored chat completions over HTTP: OpenAI's GET/POST/DELETE /chat/completions/{id}, the list and messages.

The handlers translate query parameters and bodies to ChatService's store RPCs and the replies to OpenAI's
ChatCompletionList, ChatCompletionMessageList and ChatCompletionDeleted objects.
"""

from __future__ import annotations

import json
import re
from typing import Any

from clients.v1 import chat_pb2
from rest_bridge import responses
from rest_bridge.handlers import BridgeHandler, ChatCompletionsHandler, JsonBodyHandler
from rest_bridge.requests import bad_request

Query = dict[str, list[bytes]]  # tornado's request.query_arguments
_METADATA_KEY = re.compile(r"metadata\[(.*)\]", re.DOTALL)
_ROLES = {"system", "developer", "user", "assistant", "tool"}


def stored_completion(completion: chat_pb2.CreateChatCompletionResponse) -> dict[str, Any]:
    """A stored chat completion as OpenAI returns it: the chat.completion object with its metadata."""
    return {**responses.chat_completion(completion), "metadata": dict(completion.metadata)}


def _page(data: list[dict[str, Any]], reply: Any) -> dict[str, Any]:
    return {"object": "list", "data": data, "first_id": reply.first_id, "last_id": reply.last_id,
            "has_more": reply.has_more}  # fmt: skip


def _message(stored: chat_pb2.StoredChatMessage) -> dict[str, Any]:
    """One request message of a stored completion, as OpenAI's ChatCompletionMessageList item."""
    message = stored.message
    parts = [
        {"type": "text", "text": part.text}
        if part.type == "text"
        else {"type": part.type, "image_url": {"url": part.image_url.url}}
        for part in message.content_parts
    ]
    out: dict[str, Any] = {
        "id": stored.id,
        "role": message.role,
        "content": message.content if message.HasField("content") else None,
        "refusal": None,
        "content_parts": parts or None,
    }
    if message.HasField("name"):
        out["name"] = message.name
    if len(message.tool_calls):
        out["tool_calls"] = [
            {"id": call.id, "type": "function",
             "function": {"name": call.function.name, "arguments": call.function.arguments}}
            for call in message.tool_calls
        ]  # fmt: skip
    if message.HasField("tool_call_id"):
        out["tool_call_id"] = message.tool_call_id
    return out


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
    unknown = sorted(set(body) - {"metadata"})
    if unknown:
        raise bad_request(unknown[0], f"Unrecognized request argument supplied: {unknown[0]}")
    if "metadata" not in body:
        raise bad_request("metadata", "Missing required parameter: 'metadata'.")
    metadata = body["metadata"] or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise bad_request("metadata", f"metadata must be an object of strings, got {json.dumps(metadata)[:100]}")
    return chat_pb2.UpdateChatCompletionRequest(completion_id=completion_id, metadata=metadata)


class ChatCompletionsAndListHandler(ChatCompletionsHandler):
    """POST /v3/chat/completions (create) and GET /v3/chat/completions (list stored ones)."""

    async def get(self) -> None:
        reply = await self.unary(self.backend.chat.ListChatCompletions, list_request(self.request.query_arguments))
        self.write_json(_page([stored_completion(c) for c in reply.data], reply))


class StoredChatCompletionHandler(JsonBodyHandler):
    """GET, POST (update metadata) and DELETE /v3/chat/completions/{id}."""

    async def get(self, completion_id: str) -> None:
        _query(self.request.query_arguments, set())
        request = chat_pb2.GetChatCompletionRequest(completion_id=completion_id)
        reply = await self.unary(self.backend.chat.GetChatCompletion, request)
        self.write_json(stored_completion(reply.completion))

    async def post(self, completion_id: str) -> None:
        request = await self.translated(lambda body: update_request(completion_id, body))
        reply = await self.unary(self.backend.chat.UpdateChatCompletion, request)
        self.write_json(stored_completion(reply.completion))

    async def delete(self, completion_id: str) -> None:
        request = chat_pb2.DeleteChatCompletionRequest(completion_id=completion_id)
        reply = await self.unary(self.backend.chat.DeleteChatCompletion, request)
        self.write_json({"object": reply.object, "id": reply.id, "deleted": reply.deleted})


class StoredChatMessagesHandler(BridgeHandler):
    """GET /v3/chat/completions/{id}/messages?after=&limit=&order=."""

    async def get(self, completion_id: str) -> None:
        values, _ = _query(self.request.query_arguments, {"after", "limit", "order"})
        request = chat_pb2.ListChatCompletionMessagesRequest(completion_id=completion_id)
        _paging(request, values)
        reply = await self.unary(self.backend.chat.ListChatCompletionMessages, request)
        self.write_json(_page([_message(m) for m in reply.data], reply))


# Routes under each of app.PREFIXES; completion ids ("chatcmpl-...") have no "/".
ROUTES = [
    ("/chat/completions", ChatCompletionsAndListHandler),
    ("/chat/completions/([^/]+)", StoredChatCompletionHandler),
    ("/chat/completions/([^/]+)/messages", StoredChatMessagesHandler),
]
