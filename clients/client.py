"""Typed Python clients of ovserve: ``OvserveClient`` (blocking) and ``AsyncOvserveClient`` (asyncio).

    with OvserveClient("127.0.0.1:50051", timeout=30) as client:
        reply = client.chat("tiny-chat", [{"role": "user", "content": "Hi"}], max_tokens=16, temperature=0)
        print(reply.choices[0].message.content)

Parameters are the request's own field names (OpenAI's: ``max_tokens``,
``temperature``, ``stop``, ...); an unknown one raises TypeError before any
call. Failed calls raise ``grpc.RpcError``; ``clients.errors`` decodes the
fields they name. Both clients send ``authorization: Bearer <api_key>`` when
given a key, apply ``timeout`` as each call's deadline unless the call gives
its own, and let gRPC retry calls that fail with UNAVAILABLE ``retries`` times.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Self

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from clients._options import ChannelOptions, call_metadata, channel_options, channel_target
from clients._requests import (
    ChatMessageLike,
    InputItemLike,
    Prompt,
    chat_request,
    completion_request,
    embedding_request,
    input_items,
    rerank_request,
    transcription_request,
)
from clients.defaults import DEFAULT_TARGET
from clients.v1 import (
    audio_pb2,
    audio_pb2_grpc,
    chat_pb2,
    chat_pb2_grpc,
    completion_pb2,
    completion_pb2_grpc,
    conversation_pb2,
    conversation_pb2_grpc,
    embedding_pb2,
    embedding_pb2_grpc,
    model_pb2,
    model_pb2_grpc,
    rerank_pb2,
    rerank_pb2_grpc,
)
from clients.v1 import response_object_pb2 as objects_pb2

__all__ = ["AsyncOvserveClient", "OvserveClient"]


class _ClientSettings:
    """What both clients share: deadlines and metadata per call."""

    def __init__(self, api_key: str | None, timeout: float | None) -> None:
        self.timeout = timeout
        self._metadata = call_metadata(api_key)

    def _call(self, timeout: float | None) -> dict[str, Any]:
        """Keyword arguments of every stub call: the deadline (the call's, else the client's) and metadata."""
        return {"timeout": self.timeout if timeout is None else timeout, "metadata": self._metadata}

    def _stubs(self, channel: grpc.Channel | grpc.aio.Channel) -> None:
        self._chat = chat_pb2_grpc.ChatServiceStub(channel)
        self._completions = completion_pb2_grpc.CompletionServiceStub(channel)
        self._models = model_pb2_grpc.ModelServiceStub(channel)
        self._conversations = conversation_pb2_grpc.ConversationServiceStub(channel)
        self._health = health_pb2_grpc.HealthStub(channel)
        self._embeddings = embedding_pb2_grpc.EmbeddingServiceStub(channel)
        self._rerank = rerank_pb2_grpc.RerankServiceStub(channel)
        self._audio = audio_pb2_grpc.AudioServiceStub(channel)


class OvserveClient(_ClientSettings):
    """Blocking client of an ovserve gRPC server.

    Args:
        target: ``host:port`` of the server; several ``ip:port`` replicas, or ``dns:///name:port``
            (every address the name resolves to): calls are spread over the replicas that report
            SERVING (round_robin with gRPC health checks), and a retry goes to another one.
        api_key: sent as ``authorization: Bearer <api_key>`` on every call.
        timeout: default deadline of each call, seconds (None: no deadline).
        retries: how often gRPC retries a call that fails with UNAVAILABLE
            (at most 4; streams only before their first message; 0: never).
        credentials: TLS channel credentials; None for a plaintext channel.
        options: extra gRPC channel options, e.g. ``[("grpc.max_receive_message_length", n)]``.
    """

    def __init__(
        self,
        target: str | Sequence[str] = DEFAULT_TARGET,
        *,
        api_key: str | None = None,
        timeout: float | None = 60.0,
        retries: int = 3,
        credentials: grpc.ChannelCredentials | None = None,
        options: ChannelOptions = (),
    ) -> None:
        super().__init__(api_key, timeout)
        address, balanced = channel_target(target)
        all_options = channel_options(retries, options, balanced=balanced)
        self.channel = (
            grpc.secure_channel(address, credentials, all_options)
            if credentials
            else grpc.insecure_channel(address, all_options)
        )
        self._stubs(self.channel)

    def chat(
        self, model: str, messages: Iterable[ChatMessageLike], *, timeout: float | None = None, **params: Any
    ) -> chat_pb2.CreateChatCompletionResponse:
        """The model's reply to ``messages`` (dicts in OpenAI's shape or ChatMessage), once complete."""
        request = chat_request(chat_pb2.CreateChatCompletionRequest, model, messages, params)
        response: chat_pb2.CreateChatCompletionResponse = self._chat.CreateChatCompletion(
            request, **self._call(timeout)
        )
        return response

    def stream_chat(
        self, model: str, messages: Iterable[ChatMessageLike], *, timeout: float | None = None, **params: Any
    ) -> Iterator[chat_pb2.StreamChatCompletionResponse]:
        """The model's reply as chunks while it is generated; leaving the loop early cancels the call."""
        request = chat_request(chat_pb2.StreamChatCompletionRequest, model, messages, params)
        return _cancelling(self._chat.StreamChatCompletion(request, **self._call(timeout)))

    def complete(
        self, model: str, prompt: Prompt, *, timeout: float | None = None, **params: Any
    ) -> completion_pb2.CreateCompletionResponse:
        """Completion of ``prompt``: a string, strings, token ids or token-id lists (one choice per prompt)."""
        request = completion_request(completion_pb2.CreateCompletionRequest, model, prompt, params)
        response: completion_pb2.CreateCompletionResponse = self._completions.CreateCompletion(
            request, **self._call(timeout)
        )
        return response

    def stream_complete(
        self, model: str, prompt: Prompt, *, timeout: float | None = None, **params: Any
    ) -> Iterator[completion_pb2.StreamCompletionResponse]:
        """Completion of ``prompt`` as chunks while it is generated; leaving the loop early cancels the call."""
        request = completion_request(completion_pb2.StreamCompletionRequest, model, prompt, params)
        return _cancelling(self._completions.StreamCompletion(request, **self._call(timeout)))

    def list_models(self, *, timeout: float | None = None) -> list[model_pb2.Model]:
        """The served models."""
        response = self._models.ListModels(model_pb2.ListModelsRequest(), **self._call(timeout))
        return list(response.data)

    # ---- embeddings, rerank, transcription (models of those tasks) ----

    def embed(
        self, model: str, inputs: Prompt, *, timeout: float | None = None, **params: Any
    ) -> embedding_pb2.CreateEmbeddingResponse:
        """One vector per input: a string, strings, token ids or token-id lists (``input_type``, ``dimensions``)."""
        reply: embedding_pb2.CreateEmbeddingResponse = self._embeddings.CreateEmbedding(
            embedding_request(model, inputs, params), **self._call(timeout)
        )
        return reply

    def rerank(
        self, model: str, query: str, documents: Iterable[str], *, timeout: float | None = None, **params: Any
    ) -> rerank_pb2.RerankResponse:
        """``documents`` ranked by relevance to ``query``, best first (``top_n``, ``return_documents``)."""
        reply: rerank_pb2.RerankResponse = self._rerank.Rerank(
            rerank_request(model, query, documents, params), **self._call(timeout)
        )
        return reply

    def transcribe(
        self, model: str, audio: bytes, *, timeout: float | None = None, **params: Any
    ) -> audio_pb2.CreateTranscriptionResponse:
        """The transcript of an audio file's bytes (``language``, ``prompt``, ``timestamp_granularities``...)."""
        request = transcription_request(audio_pb2.CreateTranscriptionRequest, model, audio, params)
        reply: audio_pb2.CreateTranscriptionResponse = self._audio.CreateTranscription(request, **self._call(timeout))
        return reply

    def stream_transcription(
        self, model: str, audio: bytes, *, timeout: float | None = None, **params: Any
    ) -> Iterator[audio_pb2.StreamTranscriptionResponse]:
        """The transcript as deltas while it is decoded, then the whole of it; leaving the loop cancels the call."""
        request = transcription_request(audio_pb2.StreamTranscriptionRequest, model, audio, params)
        return _cancelling(self._audio.StreamTranscription(request, **self._call(timeout)))

    def get_model(self, model: str, *, timeout: float | None = None) -> model_pb2.Model:
        """One served model; NOT_FOUND if it is not served."""
        response = self._models.GetModel(model_pb2.GetModelRequest(model=model), **self._call(timeout))
        result: model_pb2.Model = response.model
        return result

    def health(self, service: str = "", *, timeout: float | None = None) -> str:
        """The standard gRPC health status of the server (or one service): "SERVING", "NOT_SERVING", ..."""
        response = self._health.Check(health_pb2.HealthCheckRequest(service=service), **self._call(timeout))
        return health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)

    # ---- conversations (ConversationService; items are Responses input items, dicts in OpenAI's shape) ----

    def create_conversation(
        self,
        items: Iterable[InputItemLike] = (),
        *,
        metadata: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> conversation_pb2.Conversation:
        """A new conversation holding ``items`` (at most 20)."""
        request = conversation_pb2.CreateConversationRequest(items=input_items(items), metadata=metadata)
        reply = self._conversations.CreateConversation(request, **self._call(timeout))
        return reply.conversation

    def get_conversation(self, conversation_id: str, *, timeout: float | None = None) -> conversation_pb2.Conversation:
        """A conversation; NOT_FOUND if unknown (or another API key's)."""
        request = conversation_pb2.GetConversationRequest(conversation_id=conversation_id)
        return self._conversations.GetConversation(request, **self._call(timeout)).conversation

    def update_conversation(
        self, conversation_id: str, metadata: Mapping[str, str], *, timeout: float | None = None
    ) -> conversation_pb2.Conversation:
        """Replace a conversation's metadata."""
        request = conversation_pb2.UpdateConversationRequest(conversation_id=conversation_id, metadata=metadata)
        return self._conversations.UpdateConversation(request, **self._call(timeout)).conversation

    def delete_conversation(
        self, conversation_id: str, *, timeout: float | None = None
    ) -> conversation_pb2.DeleteConversationResponse:
        """Delete a conversation and its items."""
        request = conversation_pb2.DeleteConversationRequest(conversation_id=conversation_id)
        return self._conversations.DeleteConversation(request, **self._call(timeout))

    def list_conversation_items(
        self,
        conversation_id: str,
        *,
        after: str | None = None,
        limit: int | None = None,
        order: str | None = None,
        timeout: float | None = None,
    ) -> conversation_pb2.ListConversationItemsResponse:
        """One page of a conversation's items (newest first unless ``order="asc"``)."""
        request = _list_items_request(conversation_id, after, limit, order)
        return self._conversations.ListConversationItems(request, **self._call(timeout))

    def add_conversation_items(
        self, conversation_id: str, items: Iterable[InputItemLike], *, timeout: float | None = None
    ) -> list[objects_pb2.InputItem]:
        """Append items (at most 20) to a conversation; returns them with their ids."""
        request = conversation_pb2.CreateConversationItemsRequest(
            conversation_id=conversation_id, items=input_items(items)
        )
        return list(self._conversations.CreateConversationItems(request, **self._call(timeout)).data)

    def get_conversation_item(
        self, conversation_id: str, item_id: str, *, timeout: float | None = None
    ) -> objects_pb2.InputItem:
        """One item of a conversation."""
        request = conversation_pb2.GetConversationItemRequest(conversation_id=conversation_id, item_id=item_id)
        return self._conversations.GetConversationItem(request, **self._call(timeout)).item

    def delete_conversation_item(
        self, conversation_id: str, item_id: str, *, timeout: float | None = None
    ) -> conversation_pb2.Conversation:
        """Delete one item of a conversation; returns the conversation."""
        request = conversation_pb2.DeleteConversationItemRequest(conversation_id=conversation_id, item_id=item_id)
        return self._conversations.DeleteConversationItem(request, **self._call(timeout)).conversation

    def close(self) -> None:
        """Close the channel; calls in flight are cancelled."""
        self.channel.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class AsyncOvserveClient(_ClientSettings):
    """asyncio client of an ovserve gRPC server (grpc.aio); same arguments as OvserveClient.

    Create it inside the event loop that uses it: grpc.aio channels belong to a loop.
    """

    def __init__(
        self,
        target: str | Sequence[str] = DEFAULT_TARGET,
        *,
        api_key: str | None = None,
        timeout: float | None = 60.0,
        retries: int = 3,
        credentials: grpc.ChannelCredentials | None = None,
        options: ChannelOptions = (),
    ) -> None:
        super().__init__(api_key, timeout)
        address, balanced = channel_target(target)
        all_options = channel_options(retries, options, balanced=balanced)
        self.channel = (
            grpc.aio.secure_channel(address, credentials, all_options)
            if credentials
            else grpc.aio.insecure_channel(address, all_options)
        )
        self._stubs(self.channel)

    async def chat(
        self, model: str, messages: Iterable[ChatMessageLike], *, timeout: float | None = None, **params: Any
    ) -> chat_pb2.CreateChatCompletionResponse:
        """The model's reply to ``messages`` (dicts in OpenAI's shape or ChatMessage), once complete."""
        request = chat_request(chat_pb2.CreateChatCompletionRequest, model, messages, params)
        response: chat_pb2.CreateChatCompletionResponse = await self._chat.CreateChatCompletion(
            request, **self._call(timeout)
        )
        return response

    def stream_chat(
        self, model: str, messages: Iterable[ChatMessageLike], *, timeout: float | None = None, **params: Any
    ) -> AsyncIterator[chat_pb2.StreamChatCompletionResponse]:
        """The model's reply as chunks (``async for``); leaving the loop early cancels the call."""
        request = chat_request(chat_pb2.StreamChatCompletionRequest, model, messages, params)
        return _async_cancelling(self._chat.StreamChatCompletion(request, **self._call(timeout)))

    async def complete(
        self, model: str, prompt: Prompt, *, timeout: float | None = None, **params: Any
    ) -> completion_pb2.CreateCompletionResponse:
        """Completion of ``prompt``: a string, strings, token ids or token-id lists (one choice per prompt)."""
        request = completion_request(completion_pb2.CreateCompletionRequest, model, prompt, params)
        response: completion_pb2.CreateCompletionResponse = await self._completions.CreateCompletion(
            request, **self._call(timeout)
        )
        return response

    def stream_complete(
        self, model: str, prompt: Prompt, *, timeout: float | None = None, **params: Any
    ) -> AsyncIterator[completion_pb2.StreamCompletionResponse]:
        """Completion of ``prompt`` as chunks (``async for``); leaving the loop early cancels the call."""
        request = completion_request(completion_pb2.StreamCompletionRequest, model, prompt, params)
        return _async_cancelling(self._completions.StreamCompletion(request, **self._call(timeout)))

    # ---- embeddings, rerank, transcription (models of those tasks) ----

    async def embed(
        self, model: str, inputs: Prompt, *, timeout: float | None = None, **params: Any
    ) -> embedding_pb2.CreateEmbeddingResponse:
        """One vector per input: a string, strings, token ids or token-id lists (``input_type``, ``dimensions``)."""
        reply: embedding_pb2.CreateEmbeddingResponse = await self._embeddings.CreateEmbedding(
            embedding_request(model, inputs, params), **self._call(timeout)
        )
        return reply

    async def rerank(
        self, model: str, query: str, documents: Iterable[str], *, timeout: float | None = None, **params: Any
    ) -> rerank_pb2.RerankResponse:
        """``documents`` ranked by relevance to ``query``, best first (``top_n``, ``return_documents``)."""
        reply: rerank_pb2.RerankResponse = await self._rerank.Rerank(
            rerank_request(model, query, documents, params), **self._call(timeout)
        )
        return reply

    async def transcribe(
        self, model: str, audio: bytes, *, timeout: float | None = None, **params: Any
    ) -> audio_pb2.CreateTranscriptionResponse:
        """The transcript of an audio file's bytes (``language``, ``prompt``, ``timestamp_granularities``...)."""
        request = transcription_request(audio_pb2.CreateTranscriptionRequest, model, audio, params)
        reply: audio_pb2.CreateTranscriptionResponse = await self._audio.CreateTranscription(
            request, **self._call(timeout)
        )
        return reply

    def stream_transcription(
        self, model: str, audio: bytes, *, timeout: float | None = None, **params: Any
    ) -> AsyncIterator[audio_pb2.StreamTranscriptionResponse]:
        """The transcript as deltas while it is decoded, then the whole of it."""
        request = transcription_request(audio_pb2.StreamTranscriptionRequest, model, audio, params)
        return self._audio.StreamTranscription(request, **self._call(timeout))  # type: ignore[no-any-return]

    async def list_models(self, *, timeout: float | None = None) -> list[model_pb2.Model]:
        """The served models."""
        response = await self._models.ListModels(model_pb2.ListModelsRequest(), **self._call(timeout))
        return list(response.data)

    async def get_model(self, model: str, *, timeout: float | None = None) -> model_pb2.Model:
        """One served model; NOT_FOUND if it is not served."""
        response = await self._models.GetModel(model_pb2.GetModelRequest(model=model), **self._call(timeout))
        result: model_pb2.Model = response.model
        return result

    async def health(self, service: str = "", *, timeout: float | None = None) -> str:
        """The standard gRPC health status of the server (or one service): "SERVING", "NOT_SERVING", ..."""
        response = await self._health.Check(health_pb2.HealthCheckRequest(service=service), **self._call(timeout))
        return health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)

    # ---- conversations (ConversationService; items are Responses input items, dicts in OpenAI's shape) ----

    async def create_conversation(
        self,
        items: Iterable[InputItemLike] = (),
        *,
        metadata: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> conversation_pb2.Conversation:
        """A new conversation holding ``items`` (at most 20)."""
        request = conversation_pb2.CreateConversationRequest(items=input_items(items), metadata=metadata)
        reply = await self._conversations.CreateConversation(request, **self._call(timeout))
        return reply.conversation

    async def get_conversation(
        self, conversation_id: str, *, timeout: float | None = None
    ) -> conversation_pb2.Conversation:
        """A conversation; NOT_FOUND if unknown (or another API key's)."""
        request = conversation_pb2.GetConversationRequest(conversation_id=conversation_id)
        return (await self._conversations.GetConversation(request, **self._call(timeout))).conversation

    async def update_conversation(
        self, conversation_id: str, metadata: Mapping[str, str], *, timeout: float | None = None
    ) -> conversation_pb2.Conversation:
        """Replace a conversation's metadata."""
        request = conversation_pb2.UpdateConversationRequest(conversation_id=conversation_id, metadata=metadata)
        return (await self._conversations.UpdateConversation(request, **self._call(timeout))).conversation

    async def delete_conversation(
        self, conversation_id: str, *, timeout: float | None = None
    ) -> conversation_pb2.DeleteConversationResponse:
        """Delete a conversation and its items."""
        request = conversation_pb2.DeleteConversationRequest(conversation_id=conversation_id)
        return await self._conversations.DeleteConversation(request, **self._call(timeout))

    async def list_conversation_items(
        self,
        conversation_id: str,
        *,
        after: str | None = None,
        limit: int | None = None,
        order: str | None = None,
        timeout: float | None = None,
    ) -> conversation_pb2.ListConversationItemsResponse:
        """One page of a conversation's items (newest first unless ``order="asc"``)."""
        request = _list_items_request(conversation_id, after, limit, order)
        return await self._conversations.ListConversationItems(request, **self._call(timeout))

    async def add_conversation_items(
        self, conversation_id: str, items: Iterable[InputItemLike], *, timeout: float | None = None
    ) -> list[objects_pb2.InputItem]:
        """Append items (at most 20) to a conversation; returns them with their ids."""
        request = conversation_pb2.CreateConversationItemsRequest(
            conversation_id=conversation_id, items=input_items(items)
        )
        return list((await self._conversations.CreateConversationItems(request, **self._call(timeout))).data)

    async def get_conversation_item(
        self, conversation_id: str, item_id: str, *, timeout: float | None = None
    ) -> objects_pb2.InputItem:
        """One item of a conversation."""
        request = conversation_pb2.GetConversationItemRequest(conversation_id=conversation_id, item_id=item_id)
        return (await self._conversations.GetConversationItem(request, **self._call(timeout))).item

    async def delete_conversation_item(
        self, conversation_id: str, item_id: str, *, timeout: float | None = None
    ) -> conversation_pb2.Conversation:
        """Delete one item of a conversation; returns the conversation."""
        request = conversation_pb2.DeleteConversationItemRequest(conversation_id=conversation_id, item_id=item_id)
        return (await self._conversations.DeleteConversationItem(request, **self._call(timeout))).conversation

    async def close(self) -> None:
        """Close the channel; calls in flight are cancelled."""
        await self.channel.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.close()


def _list_items_request(
    conversation_id: str, after: str | None, limit: int | None, order: str | None
) -> conversation_pb2.ListConversationItemsRequest:
    request = conversation_pb2.ListConversationItemsRequest(conversation_id=conversation_id)
    if after is not None:
        request.after = after
    if limit is not None:
        request.limit = limit
    if order is not None:
        request.order = order
    return request


def _cancelling(call: Any) -> Iterator[Any]:
    """Iterate a server-streaming call; cancel it if the caller stops early (a no-op once it has ended)."""
    try:
        yield from call
    finally:
        call.cancel()


async def _async_cancelling(call: Any) -> AsyncIterator[Any]:
    """Iterate a grpc.aio server-streaming call; cancel it if the caller stops early."""
    try:
        async for message in call:
            yield message
    finally:
        call.cancel()
