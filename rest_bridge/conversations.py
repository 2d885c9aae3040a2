"""The Conversations API over HTTP: OpenAI's /conversations, /conversations/{id} and their items.

The handlers translate bodies and query strings to ConversationService requests and the replies to OpenAI's
Conversation, DeletedConversation, ConversationItem and ConversationItemList objects. Items are read as the
Responses API reads input items (``responses_requests``) and written as it lists them (``responses_output``).
"""

from __future__ import annotations

from typing import Any

from clients.polymorphic import json_type
from clients.v1 import conversation_pb2 as pb
from rest_bridge import responses_output
from rest_bridge.handlers import BridgeHandler, JsonBodyHandler
from rest_bridge.requests import _without_nulls, bad_request, to_message
from rest_bridge.responses_requests import Query, _item, _strings, paged

# ---- requests ----


def _body(body: dict[str, Any], allowed: set[str]) -> dict[str, Any]:
    """The body without nulls; a key not in ``allowed`` is a 400 naming it."""
    for key in body:
        if key not in allowed:
            raise bad_request(key, f"Unrecognized request argument supplied: {key}")
    return _without_nulls(body)


def _items(body: dict[str, Any]) -> None:
    """OpenAI's ``items`` (input items) in proto JSON form, in place."""
    if "items" not in body:
        return
    items = body["items"]
    if not isinstance(items, list):
        raise bad_request("items", f"items must be a list of input items, got {json_type(items)}")
    body["items"] = [_item(item, f"items[{i}]") for i, item in enumerate(items)]


def create_request(body: dict[str, Any]) -> pb.CreateConversationRequest:
    """POST /conversations with OpenAI's CreateConversationBody."""
    proto_json = _body(body, {"items", "metadata"})
    _items(proto_json)
    return to_message(proto_json, pb.CreateConversationRequest)


def update_request(conversation_id: str, body: dict[str, Any]) -> pb.UpdateConversationRequest:
    """POST /conversations/{id} with OpenAI's UpdateConversationBody: ``{"metadata": {...}}``."""
    if "metadata" not in body:
        raise bad_request("metadata", "Missing required parameter: 'metadata'.")
    proto_json = _body(body, {"metadata"})
    return to_message({**proto_json, "conversation_id": conversation_id}, pb.UpdateConversationRequest)


def add_items_request(conversation_id: str, body: dict[str, Any]) -> pb.CreateConversationItemsRequest:
    """POST /conversations/{id}/items with ``{"items": [...]}`` (and ``?include=``, accepted)."""
    if "items" not in body:
        raise bad_request("items", "Missing required parameter: 'items'.")
    proto_json = _body(body, {"items"})
    _items(proto_json)
    return to_message({**proto_json, "conversation_id": conversation_id}, pb.CreateConversationItemsRequest)


def list_request(conversation_id: str, query: Query) -> pb.ListConversationItemsRequest:
    """GET /conversations/{id}/items?after=&limit=&order=&include=."""
    return paged(pb.ListConversationItemsRequest(conversation_id=conversation_id), query)


# ---- replies ----


def conversation(entry: pb.Conversation) -> dict[str, Any]:
    """OpenAI's Conversation object."""
    return {
        "id": entry.id,
        "object": entry.object or "conversation",
        "created_at": entry.created_at,
        "metadata": dict(entry.metadata),
    }


def item_list(reply: pb.ListConversationItemsResponse | pb.CreateConversationItemsResponse) -> dict[str, Any]:
    """OpenAI's ConversationItemList."""
    return {
        "object": reply.object or "list",
        "data": [responses_output.input_item(item) for item in reply.data],
        # Strings even for an empty page (OpenAI's ConversationItemList requires them).
        "first_id": reply.first_id,
        "last_id": reply.last_id,
        "has_more": reply.has_more,
    }


# ---- handlers ----


class ConversationsHandler(JsonBodyHandler):
    """POST /v3/conversations."""

    async def post(self) -> None:
        request = await self.translated(create_request)
        reply = await self.unary(self.backend.conversations.CreateConversation, request)
        self.write_json(conversation(reply.conversation))


class ConversationHandler(JsonBodyHandler):
    """GET, POST (update metadata) and DELETE /v3/conversations/{id}."""

    async def get(self, conversation_id: str) -> None:
        _strings(self.request.query_arguments, set(), set())
        request = pb.GetConversationRequest(conversation_id=conversation_id)
        reply = await self.unary(self.backend.conversations.GetConversation, request)
        self.write_json(conversation(reply.conversation))

    async def post(self, conversation_id: str) -> None:
        request = await self.translated(lambda body: update_request(conversation_id, body))
        reply = await self.unary(self.backend.conversations.UpdateConversation, request)
        self.write_json(conversation(reply.conversation))

    async def delete(self, conversation_id: str) -> None:
        request = pb.DeleteConversationRequest(conversation_id=conversation_id)
        reply = await self.unary(self.backend.conversations.DeleteConversation, request)
        self.write_json({"id": reply.id, "object": reply.object, "deleted": reply.deleted})


class ConversationItemsHandler(JsonBodyHandler):
    """GET (list) and POST (add) /v3/conversations/{id}/items."""

    async def get(self, conversation_id: str) -> None:
        request = list_request(conversation_id, self.request.query_arguments)
        reply = await self.unary(self.backend.conversations.ListConversationItems, request)
        self.write_json(item_list(reply))

    async def post(self, conversation_id: str) -> None:
        include = _strings(self.request.query_arguments, {"include"}, {"include"}).get("include", [])
        request = await self.translated(lambda body: add_items_request(conversation_id, body))
        request.include.extend(include)
        reply = await self.unary(self.backend.conversations.CreateConversationItems, request)
        self.write_json(item_list(reply))


class ConversationItemHandler(BridgeHandler):
    """GET and DELETE /v3/conversations/{id}/items/{item_id}."""

    async def get(self, conversation_id: str, item_id: str) -> None:
        include = _strings(self.request.query_arguments, {"include"}, {"include"}).get("include", [])
        request = pb.GetConversationItemRequest(conversation_id=conversation_id, item_id=item_id, include=include)
        reply = await self.unary(self.backend.conversations.GetConversationItem, request)
        self.write_json(responses_output.input_item(reply.item))

    async def delete(self, conversation_id: str, item_id: str) -> None:
        request = pb.DeleteConversationItemRequest(conversation_id=conversation_id, item_id=item_id)
        reply = await self.unary(self.backend.conversations.DeleteConversationItem, request)
        self.write_json(conversation(reply.conversation))


# Routes under each of app.PREFIXES; conversation and item ids ("conv_...", "msg_...") have no "/".
ROUTES = [
    ("/conversations", ConversationsHandler),
    ("/conversations/([^/]+)", ConversationHandler),
    ("/conversations/([^/]+)/items", ConversationItemsHandler),
    ("/conversations/([^/]+)/items/([^/]+)", ConversationItemHandler),
]
