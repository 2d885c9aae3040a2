"""ConversationService semantics: conversations of Responses items, and what a response in one reads and adds.

A conversation is a stored list of input items (messages, function calls and their outputs, reasoning) with
metadata, owned by the caller's tenant. ``ConversationsApi`` is the facade the servicer calls; the Responses
API uses ``context`` (the items before a request's input, as chat messages) and ``record`` (append a finished
response's input and output items), so a response with ``conversation`` continues it as one with
``previous_response_id`` continues a stored response.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ovserve.clients.v1 import conversation_pb2 as pb
from ovserve.clients.v1 import response_object_pb2 as objects_pb2
from ovserve.service.api.media_parts import MediaParts
from ovserve.service.api.stored_chat import metadata_violations, page_bounds, page_reply
from ovserve.service.errors import FieldViolation, InvalidArgument, NotFound, quote
from ovserve.service.ids import new_id, now
from ovserve.service.media import MediaPolicy
from ovserve.service.models import ServedModel
from ovserve.service.responses.conversation import items_turn
from ovserve.service.store.conversations import ConversationFull, ConversationStore
from ovserve.service.store.files import UploadedFiles
from ovserve.service.store.items import output_items
from ovserve.service.store.tenancy import tenant

#: OpenAI's bound on the items one create or add call carries.
MAX_ITEMS_PER_CALL = 20
#: The most items a conversation holds; adding past it is refused (a response's own items included).
MAX_CONVERSATION_ITEMS = 1000
_T = TypeVar("_T")
# Checking stored items needs no model (MediaParts(None)): images are judged when a response renders them.


class ConversationsApi:
    """The Conversations API over a conversation store."""

    def __init__(self, store: ConversationStore) -> None:
        self._store = store

    # ---- conversations ----

    async def create(self, request: pb.CreateConversationRequest) -> pb.Conversation:
        """CreateConversation: a new conversation with up to 20 items and metadata."""
        violations = metadata_violations(request.metadata)
        items = _checked_items(request.items, "items", violations)
        InvalidArgument.check(violations)
        conversation = pb.Conversation(
            id=new_id("conv_"), object="conversation", created_at=now(), metadata=request.metadata
        )
        await self._bounded(self._store.create(conversation, items, tenant.get()), "items")
        return conversation

    async def get(self, conversation_id: str) -> pb.Conversation:
        """GetConversation."""
        found = await self._store.get(conversation_id, tenant.get()) if conversation_id else None
        return _found(found, conversation_id)

    async def update(self, request: pb.UpdateConversationRequest) -> pb.Conversation:
        """UpdateConversation: the metadata is replaced."""
        InvalidArgument.check(metadata_violations(request.metadata))
        updated = await self._store.set_metadata(request.conversation_id, dict(request.metadata), tenant.get())
        return _found(updated, request.conversation_id)

    async def delete(self, conversation_id: str) -> pb.DeleteConversationResponse:
        """DeleteConversation: the conversation and its items."""
        if not await self._store.delete(conversation_id, tenant.get()):
            raise _not_found(conversation_id)
        return pb.DeleteConversationResponse(id=conversation_id, object="conversation.deleted", deleted=True)

    # ---- items ----

    async def list_items(self, request: pb.ListConversationItemsRequest) -> pb.ListConversationItemsResponse:
        """ListConversationItems: one page, newest first unless ``order`` is "asc"."""
        limit, order = page_bounds(request, default_order="desc")
        after = request.after if request.HasField("after") else None
        try:
            page = await self._store.page(request.conversation_id, tenant.get(), after=after, limit=limit, order=order)
        except KeyError:
            raise InvalidArgument.of("after", f"no item {quote(after)} in this conversation") from None
        if page is None:
            raise _not_found(request.conversation_id)
        return page_reply(pb.ListConversationItemsResponse, page.items, page.has_more)

    async def add_items(self, request: pb.CreateConversationItemsRequest) -> pb.CreateConversationItemsResponse:
        """CreateConversationItems: append 1-20 items; returns them with their ids."""
        violations: list[FieldViolation] = []
        if not len(request.items):
            violations.append(FieldViolation("items", "required: at least one item"))
        items = _checked_items(request.items, "items", violations)
        InvalidArgument.check(violations)
        added = await self._bounded(self._store.append(request.conversation_id, items, tenant.get()), "items")
        if added is None:
            raise _not_found(request.conversation_id)
        return pb.CreateConversationItemsResponse(
            object="list", data=added, first_id=added[0].id, last_id=added[-1].id, has_more=False
        )

    async def get_item(self, request: pb.GetConversationItemRequest) -> objects_pb2.InputItem:
        """GetConversationItem."""
        found = await self._store.item(request.conversation_id, request.item_id, tenant.get())
        if found is None:
            raise _not_found(request.conversation_id)
        if isinstance(found, KeyError):
            raise NotFound(f"no item {quote(request.item_id)} in this conversation", param="item_id")
        return found

    async def delete_item(self, request: pb.DeleteConversationItemRequest) -> pb.Conversation:
        """DeleteConversationItem: returns the conversation."""
        found = await self._store.delete_item(request.conversation_id, request.item_id, tenant.get())
        if found is None:
            raise _not_found(request.conversation_id)
        if isinstance(found, KeyError):
            raise NotFound(f"no item {quote(request.item_id)} in this conversation", param="item_id")
        return found

    # ---- what a response in a conversation reads and adds ----

    async def stored_items(self, conversation_id: str) -> list[objects_pb2.InputItem]:
        """The conversation's items as stored, oldest first (none when it is unknown: ``context`` says so)."""
        return await self._store.items(conversation_id, tenant.get()) or []

    async def context(
        self,
        conversation_id: str,
        *,
        adding: int,
        model: ServedModel,
        media: MediaPolicy,
        uploaded: UploadedFiles | None = None,
    ) -> list[dict[str, Any]]:
        """The conversation's items as chat messages, before a request that will add ``adding`` input items.

        NOT_FOUND (param ``conversation``) if unknown; INVALID_ARGUMENT if the request's items and one output
        item would not fit in the conversation any more."""
        items = await self._store.items(conversation_id, tenant.get()) if conversation_id else None
        if items is None:
            raise NotFound(f"no conversation {quote(conversation_id)}", param="conversation")
        if len(items) + adding + 1 > MAX_CONVERSATION_ITEMS:
            raise InvalidArgument.of("conversation", _full_message(len(items)))
        violations: list[FieldViolation] = []
        parts = MediaParts(model)
        turn = items_turn(items, "conversation.items", images=parts, violations=violations)
        InvalidArgument.check(violations)  # e.g. an image stored for a model that takes none
        return await parts.with_files(turn.messages, media, uploaded)  # (images: the caller leaves earlier turns' out)

    async def record(
        self, conversation_id: str, owner: str, inputs: Sequence[objects_pb2.InputItem], response: objects_pb2.Response
    ) -> None:
        """Append a finished response's input items and output items (as input items) to its conversation.

        Past the bound the items are appended all the same: the response already ran, and refusing now would
        lose its turn (``context`` leaves room for one)."""
        items = [*inputs, *output_items(response)]
        await self._store.append(conversation_id, items, owner, bounded=False)

    @staticmethod
    async def _bounded(work: Awaitable[_T], field_name: str) -> _T:
        """``work``'s result; past the conversation's bound, INVALID_ARGUMENT naming ``field_name``."""
        try:
            return await work
        except ConversationFull as full:
            raise InvalidArgument.of(field_name, _full_message(full.held)) from None


@dataclass(frozen=True)
class ConversationTurn:
    """A response's place in a conversation: where its items go when it ends."""

    conversation_id: str
    owner: str  # the tenant of the request (the response may end in a background task)
    api: ConversationsApi

    async def record(self, inputs: Sequence[objects_pb2.InputItem], response: objects_pb2.Response) -> None:
        """Append the input items and the output of a response that ran to its end (completed or incomplete);
        called before it says so, so a caller who sees it end finds its turn in the conversation."""
        await self.api.record(self.conversation_id, self.owner, inputs, response)


def _checked_items(
    items: Sequence[objects_pb2.InputItem], field_name: str, violations: list[FieldViolation]
) -> list[objects_pb2.InputItem]:
    """The items with type and id set; what is wrong goes to ``violations`` (naming ``items[i]...``)."""
    if len(items) > MAX_ITEMS_PER_CALL:
        violations.append(FieldViolation(field_name, f"at most {MAX_ITEMS_PER_CALL} items at a time; got {len(items)}"))
        return []
    turn = items_turn(items, field_name, images=MediaParts(None), violations=violations)
    return turn.items


def _full_message(held: int) -> str:
    return (
        f"the conversation holds {held} items and may hold at most {MAX_CONVERSATION_ITEMS}: "
        "start a new conversation (or delete items)"
    )


def _found(conversation: pb.Conversation | None, conversation_id: str) -> pb.Conversation:
    if conversation is None:
        raise _not_found(conversation_id)
    return conversation


def _not_found(conversation_id: str) -> NotFound:
    return NotFound(f"no conversation {quote(conversation_id)}", param="conversation_id")
