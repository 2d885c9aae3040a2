"""Stored chat completions: chat ``store: true`` keeps the completion, as OpenAI's stored chat completions.

A completion created with ``store: true`` (unary, or streamed: then the completion the stream added up to,
stored when it ends) is kept with its request messages and ``metadata`` in the response store's file, and
belongs to the caller's tenant. The other ChatService RPCs read it back, list, update metadata and delete.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

from google.protobuf.message import Message

from ovserve.clients.v1 import chat_pb2, common_pb2
from ovserve.service.errors import FieldViolation, InvalidArgument, NotFound, quote
from ovserve.service.store.chat_completions import ChatCompletionStore, Completion
from ovserve.service.store.tenancy import tenant

Request = chat_pb2.CreateChatCompletionRequest | chat_pb2.StreamChatCompletionRequest
Chunk = chat_pb2.StreamChatCompletionResponse

# OpenAI's bounds on metadata.
MAX_METADATA_PAIRS = 16
MAX_METADATA_KEY = 64
MAX_METADATA_VALUE = 512
MAX_PAGE = 100
_Reply = TypeVar("_Reply", bound=Message)
DEFAULT_PAGE = 20
ORDERS = ("asc", "desc")


def metadata_violations(metadata: Mapping[str, str], field: str = "metadata") -> list[FieldViolation]:
    """What is wrong with a metadata map (OpenAI's bounds: 16 pairs, keys up to 64 characters, values 512)."""
    pairs = dict(metadata)
    violations = []
    if len(pairs) > MAX_METADATA_PAIRS:
        violations.append(FieldViolation(field, f"at most {MAX_METADATA_PAIRS} pairs; got {len(pairs)}"))
    for key, value in list(pairs.items())[: MAX_METADATA_PAIRS + 1]:
        if len(key) > MAX_METADATA_KEY:
            violations.append(
                FieldViolation(f"{field}.{key[:MAX_METADATA_KEY]}", f"keys are at most {MAX_METADATA_KEY} characters")
            )
        if len(value) > MAX_METADATA_VALUE:
            violations.append(
                FieldViolation(
                    f"{field}.{key[:MAX_METADATA_KEY]}", f"values are at most {MAX_METADATA_VALUE} characters"
                )
            )
    return violations


def page_reply(reply_class: type[_Reply], items: Sequence[Any], has_more: bool) -> _Reply:
    """OpenAI's list object of one page of ``items`` (each with an ``id``): ``reply_class`` with object "list",
    the items, the first and last ids (empty for an empty page) and whether more follow."""
    return reply_class(
        object="list",
        data=items,
        first_id=items[0].id if items else "",
        last_id=items[-1].id if items else "",
        has_more=has_more,
    )


def page_bounds(
    request: Message, *, default_order: str = "asc", default_size: int = DEFAULT_PAGE, max_size: int = MAX_PAGE
) -> tuple[int, str]:
    """The page size and order of a listing request (its optional ``limit`` and ``order``), checked."""
    fields = request.DESCRIPTOR.fields_by_name
    size = request.limit if request.HasField("limit") else default_size  # type: ignore[attr-defined]
    direction = request.order if "order" in fields and request.HasField("order") else default_order  # type: ignore[attr-defined]
    violations = []
    if not 1 <= size <= max_size:
        violations.append(FieldViolation("limit", f"must be between 1 and {max_size}; got {size}"))
    if direction not in ORDERS:
        violations.append(FieldViolation("order", f"must be asc or desc; got {quote(direction)}"))
    InvalidArgument.check(violations)
    return size, direction


class StoredChatCompletions:
    """ChatService's store: what ``store: true`` keeps, and the RPCs that read it back."""

    def __init__(self, store: ChatCompletionStore) -> None:
        self._store = store

    async def create(
        self, request: chat_pb2.CreateChatCompletionRequest, generate: Callable[[], Awaitable[Completion]]
    ) -> Completion:
        """``generate()``'s completion, stored first when the request says ``store: true``."""
        if not request.store:  # unstored metadata is only logged: OpenAI's bounds apply to what is kept
            return await generate()
        InvalidArgument.check(metadata_violations(request.metadata))
        completion = await generate()
        completion.metadata.update(request.metadata)
        await self._store.put(completion, list(request.messages), tenant.get())
        return completion

    async def stream(
        self,
        request: chat_pb2.StreamChatCompletionRequest,
        generate: Callable[[chat_pb2.StreamChatCompletionRequest], AsyncIterator[Chunk]],
    ) -> AsyncIterator[Chunk]:
        """``generate(request)``'s chunks; with ``store: true`` the completion they add up to is stored at the end.

        The stored completion needs token counts, so usage is asked for and, if the client did not ask, its
        chunk is kept from the client.
        """
        if not request.store:
            async with contextlib.aclosing(cast(AsyncGenerator[Chunk, None], generate(request))) as chunks:
                async for chunk in chunks:
                    yield chunk
            return
        InvalidArgument.check(metadata_violations(request.metadata))
        wants_usage = request.stream_options.include_usage
        counted = chat_pb2.StreamChatCompletionRequest()
        counted.CopyFrom(request)
        counted.stream_options.include_usage = True
        total = CompletionTotal()
        async with contextlib.aclosing(
            cast(AsyncGenerator[Chunk, None], generate(counted))
        ) as chunks:  # an early end stops the generation now
            async for chunk in chunks:
                total.add(chunk)
                if wants_usage or not chunk.HasField("usage"):
                    yield chunk
        completion = total.completion()
        completion.metadata.update(request.metadata)
        await self._store.put(completion, list(request.messages), tenant.get())

    async def get(self, request: chat_pb2.GetChatCompletionRequest) -> chat_pb2.GetChatCompletionResponse:
        """GetChatCompletion."""
        return chat_pb2.GetChatCompletionResponse(completion=await self._found(request.completion_id))

    async def list_completions(
        self, request: chat_pb2.ListChatCompletionsRequest
    ) -> chat_pb2.ListChatCompletionsResponse:
        """ListChatCompletions."""
        limit, order = page_bounds(request)
        InvalidArgument.check(metadata_violations(request.metadata))
        after = request.after if request.HasField("after") else None
        try:
            page = await self._store.page(
                tenant.get(),
                model=request.model if request.HasField("model") else None,
                metadata=dict(request.metadata),
                after=after,
                limit=limit,
                order=order,
            )
        except KeyError:
            raise InvalidArgument.of("after", f"no stored chat completion {quote(after)}") from None
        data = page.completions
        return chat_pb2.ListChatCompletionsResponse(
            object="list",
            data=data,
            first_id=data[0].id if data else "",
            last_id=data[-1].id if data else "",
            has_more=page.has_more,
        )

    async def messages(
        self, request: chat_pb2.ListChatCompletionMessagesRequest
    ) -> chat_pb2.ListChatCompletionMessagesResponse:
        """ListChatCompletionMessages: message ids are ``<completion id>-<position>``."""
        limit, order = page_bounds(request)
        after = None
        if request.HasField("after"):
            prefix, _, position = request.after.rpartition("-")
            if prefix != request.completion_id or not position.isdigit():
                raise InvalidArgument.of("after", f"no message {quote(request.after)} in this chat completion")
            after = int(position)
        page = await self._store.messages(request.completion_id, tenant.get(), after=after, limit=limit, order=order)
        if page is None:
            raise _not_found(request.completion_id)
        rows, has_more = page
        data = [chat_pb2.StoredChatMessage(id=f"{request.completion_id}-{i}", message=m) for i, m in rows]
        return chat_pb2.ListChatCompletionMessagesResponse(
            object="list",
            data=data,
            first_id=data[0].id if data else "",
            last_id=data[-1].id if data else "",
            has_more=has_more,
        )

    async def update(self, request: chat_pb2.UpdateChatCompletionRequest) -> chat_pb2.UpdateChatCompletionResponse:
        """UpdateChatCompletion: the metadata is replaced."""
        InvalidArgument.check(metadata_violations(request.metadata))
        updated = await self._store.set_metadata(request.completion_id, dict(request.metadata), tenant.get())
        if updated is None:
            raise _not_found(request.completion_id)
        return chat_pb2.UpdateChatCompletionResponse(completion=updated)

    async def delete(self, request: chat_pb2.DeleteChatCompletionRequest) -> chat_pb2.DeleteChatCompletionResponse:
        """DeleteChatCompletion."""
        if not await self._store.delete(request.completion_id, tenant.get()):
            raise _not_found(request.completion_id)
        return chat_pb2.DeleteChatCompletionResponse(
            id=request.completion_id, object="chat.completion.deleted", deleted=True
        )

    async def _found(self, completion_id: str) -> Completion:
        completion = await self._store.get(completion_id, tenant.get())
        if completion is None:
            raise _not_found(completion_id)
        return completion


def _not_found(completion_id: str) -> NotFound:
    return NotFound(f"no stored chat completion {quote(completion_id)}", param="completion_id")


class CompletionTotal:
    """The chat completion a stream of chunks adds up to: texts joined, tool-call pieces merged by index."""

    def __init__(self) -> None:
        self._completion = Completion(object="chat.completion")
        self._choices: dict[int, chat_pb2.ChatCompletionChoice] = {}

    def add(self, chunk: Chunk) -> None:
        """Fold one chunk in."""
        if not self._completion.id:
            self._completion.id, self._completion.created, self._completion.model = chunk.id, chunk.created, chunk.model
        if chunk.HasField("usage"):
            self._completion.usage.CopyFrom(chunk.usage)
        for part in chunk.choices:
            choice = self._choices.get(part.index)
            if choice is None:
                choice = self._choices[part.index] = chat_pb2.ChatCompletionChoice(index=part.index)
                choice.message.role = common_pb2.ROLE_ASSISTANT
            delta, message = part.delta, choice.message
            if delta.HasField("content") and delta.content:
                message.content = message.content + delta.content
            if delta.HasField("reasoning_content"):
                message.reasoning_content = message.reasoning_content + delta.reasoning_content
            for piece in delta.tool_calls:
                while len(message.tool_calls) <= piece.index:
                    message.tool_calls.add()
                call = message.tool_calls[piece.index]
                call.id = piece.id or call.id
                call.type = piece.type or call.type
                call.function.name = piece.function.name or call.function.name
                call.function.arguments += piece.function.arguments
            if part.HasField("logprobs"):
                choice.logprobs.content.extend(part.logprobs.content)
            if part.finish_reason:
                choice.finish_reason = part.finish_reason

    def completion(self) -> Completion:
        """The completion so far, choices in index order."""
        done = Completion()
        done.CopyFrom(self._completion)
        done.choices.extend(self._choices[index] for index in sorted(self._choices))
        return done
