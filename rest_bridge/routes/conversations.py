"""The Conversations API: OpenAI's /conversations, /conversations/{id} and their items.

Bodies and query strings become ConversationService requests, and the replies OpenAI's Conversation,
DeletedConversation, ConversationItem and ConversationItemList objects. Items are read as the Responses API reads
input items (``translate.responses.proto_input_item``) and written as it lists them (``render.responses.input_item``).
"""

from __future__ import annotations

from typing import Any

from ovserve.clients.polymorphic import json_type
from ovserve.clients.v1 import conversation_pb2 as pb
from ovserve.rest_bridge.handler import BridgeHandler, JsonBodyHandler
from ovserve.rest_bridge.render.responses import input_item
from ovserve.rest_bridge.translate.body import bad_request
from ovserve.rest_bridge.translate.message import message_from_body
from ovserve.rest_bridge.translate.proto_json import without_nulls
from ovserve.rest_bridge.translate.query import NO_NAMES, include, paged, query_strings
from ovserve.rest_bridge.translate.responses import proto_input_item

# ---- requests ----


def _with_items(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` without nulls, OpenAI's ``items`` (input items) in proto JSON form."""
    body = without_nulls(body)
    if "items" in body:
        items = body["items"]
        if not isinstance(items, list):
            raise bad_request("items", f"items must be a list of input items, got {json_type(items)}")
        body["items"] = [proto_input_item(item, f"items[{i}]") for i, item in enumerate(items)]
    return body


def _required(body: dict[str, Any], name: str) -> None:
    if name not in body:
        raise bad_request(name, f"Missing required parameter: '{name}'.")


def create_request(body: dict[str, Any]) -> pb.CreateConversationRequest:
    """POST /conversations with OpenAI's CreateConversationBody."""
    return message_from_body(body, pb.CreateConversationRequest, _with_items, allowed={"items", "metadata"})


def update_request(conversation_id: str, body: dict[str, Any]) -> pb.UpdateConversationRequest:
    """POST /conversations/{id} with OpenAI's UpdateConversationBody: ``{"metadata": {...}}``."""
    _required(body, "metadata")
    return message_from_body(
        body,
        pb.UpdateConversationRequest,
        lambda checked: {**without_nulls(checked), "conversation_id": conversation_id},
        allowed={"metadata"},
    )


def add_items_request(conversation_id: str, body: dict[str, Any]) -> pb.CreateConversationItemsRequest:
    """POST /conversations/{id}/items with ``{"items": [...]}`` (and ``?include=``, accepted)."""
    _required(body, "items")
    return message_from_body(
        body,
        pb.CreateConversationItemsRequest,
        lambda checked: {**_with_items(checked), "conversation_id": conversation_id},
        allowed={"items"},
    )


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
        "data": [input_item(item) for item in reply.data],
        # Strings even for an empty page (OpenAI's ConversationItemList requires them).
        "first_id": reply.first_id,
        "last_id": reply.last_id,
        "has_more": reply.has_more,
    }


def _conversation(reply: Any) -> dict[str, Any]:
    """The Conversation object of a reply that carries one (create, get, update, delete an item)."""
    return conversation(reply.conversation)


def _deleted(reply: pb.DeleteConversationResponse) -> dict[str, Any]:
    return {"id": reply.id, "object": reply.object, "deleted": reply.deleted}


# ---- handlers ----


class ConversationsHandler(JsonBodyHandler):
    """POST /v3/conversations."""

    async def post(self) -> None:
        request = await self.translated(create_request)
        await self.answer(self.backend.conversations.CreateConversation, request, _conversation)


class ConversationHandler(JsonBodyHandler):
    """GET, POST (update metadata) and DELETE /v3/conversations/{id}."""

    async def get(self, conversation_id: str) -> None:
        query_strings(self.request.query_arguments, NO_NAMES, NO_NAMES)
        request = pb.GetConversationRequest(conversation_id=conversation_id)
        await self.answer(self.backend.conversations.GetConversation, request, _conversation)

    async def post(self, conversation_id: str) -> None:
        request = await self.translated(lambda body: update_request(conversation_id, body))
        await self.answer(self.backend.conversations.UpdateConversation, request, _conversation)

    async def delete(self, conversation_id: str) -> None:
        request = pb.DeleteConversationRequest(conversation_id=conversation_id)
        await self.answer(self.backend.conversations.DeleteConversation, request, _deleted)


class ConversationItemsHandler(JsonBodyHandler):
    """GET (list) and POST (add) /v3/conversations/{id}/items."""

    async def get(self, conversation_id: str) -> None:
        request = paged(pb.ListConversationItemsRequest(conversation_id=conversation_id), self.request.query_arguments)
        await self.answer(self.backend.conversations.ListConversationItems, request, item_list)

    async def post(self, conversation_id: str) -> None:
        included = include(self.request.query_arguments)
        request = await self.translated(lambda body: add_items_request(conversation_id, body))
        request.include.extend(included)
        await self.answer(self.backend.conversations.CreateConversationItems, request, item_list)


class ConversationItemHandler(BridgeHandler):
    """GET and DELETE /v3/conversations/{id}/items/{item_id}."""

    async def get(self, conversation_id: str, item_id: str) -> None:
        included = include(self.request.query_arguments)
        request = pb.GetConversationItemRequest(conversation_id=conversation_id, item_id=item_id, include=included)
        await self.answer(self.backend.conversations.GetConversationItem, request, lambda reply: input_item(reply.item))

    async def delete(self, conversation_id: str, item_id: str) -> None:
        request = pb.DeleteConversationItemRequest(conversation_id=conversation_id, item_id=item_id)
        await self.answer(self.backend.conversations.DeleteConversationItem, request, _conversation)


# Conversation and item ids ("conv_...", "msg_...") have no "/".
ROUTES = [
    ("/conversations", ConversationsHandler),
    ("/conversations/([^/]+)", ConversationHandler),
    ("/conversations/([^/]+)/items", ConversationItemsHandler),
    ("/conversations/([^/]+)/items/([^/]+)", ConversationItemHandler),
]
