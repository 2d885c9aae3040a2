"""The gRPC servicers: thin adapters from RPCs to the API layer, plus error mapping.

Each method reads like a table of contents: call the API function, return or
yield what it gives. ServiceError becomes its own status code with google.rpc
details; anything unexpected is logged and becomes INTERNAL. CancelledError
(the client went away) and AbortError pass through untouched.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc

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
    response_pb2,
    response_pb2_grpc,
    tokenizer_pb2,
    tokenizer_pb2_grpc,
)
from service.api import chat, completions, embeddings, models, rerank, tokenizer, transcriptions
from service.api.stored_chat import StoredChatCompletions
from service.errors import ServiceError, to_rpc_status
from service.models import ModelRegistry
from service.responses.api import ResponsesApi
from service.responses.conversations import ConversationsApi

log = logging.getLogger(__name__)
Response = TypeVar("Response")


async def _abort(context: grpc.aio.ServicerContext, error: Exception) -> None:
    if isinstance(error, ServiceError):
        if error.code == grpc.StatusCode.INTERNAL:
            log.error("request failed: %s", error)
        await context.abort_with_status(to_rpc_status(error))
    log.exception("unexpected error")
    await context.abort(grpc.StatusCode.INTERNAL, f"internal error: {type(error).__name__}")


def unary(method: Callable[..., Awaitable[Response]]) -> Callable[..., Awaitable[Response]]:
    """Map a unary handler's errors to gRPC statuses."""

    @functools.wraps(method)
    async def handler(self: Any, request: Any, context: grpc.aio.ServicerContext) -> Response:
        try:
            return await method(self, request, context)
        except grpc.aio.AbortError:
            raise
        except Exception as error:
            await _abort(context, error)
            raise  # unreachable: abort raises

    return handler


def streaming(method: Callable[..., AsyncGenerator[Response, None]]) -> Callable[..., AsyncIterator[Response]]:
    """Map a server-streaming handler's errors to gRPC statuses (also mid-stream)."""

    @functools.wraps(method)
    async def handler(self: Any, request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Response]:
        try:
            # aclosing: a call that ends early closes the API's generator (and cancels its engine work) now.
            async with contextlib.aclosing(method(self, request, context)) as messages:
                async for message in messages:
                    yield message
        except grpc.aio.AbortError:
            raise
        except Exception as error:
            await _abort(context, error)

    return handler


class CompletionServicer(completion_pb2_grpc.CompletionServiceServicer):
    """ovserve.v1.CompletionService."""

    def __init__(self, registry: ModelRegistry) -> None:
        self._models = registry

    @unary
    async def CreateCompletion(self, request: completion_pb2.CreateCompletionRequest, context: Any) -> Any:
        return await completions.create_completion(self._models, request)

    @streaming
    async def StreamCompletion(self, request: completion_pb2.StreamCompletionRequest, context: Any) -> Any:
        async for chunk in completions.stream_completion(self._models, request):
            yield chunk


class ChatServicer(chat_pb2_grpc.ChatServiceServicer):
    """ovserve.v1.ChatService."""

    def __init__(self, registry: ModelRegistry, stored: StoredChatCompletions) -> None:
        self._models = registry
        self._stored = stored

    @unary
    async def CreateChatCompletion(self, request: chat_pb2.CreateChatCompletionRequest, context: Any) -> Any:
        return await self._stored.create(request, lambda: chat.create_chat_completion(self._models, request))

    @streaming
    async def StreamChatCompletion(self, request: chat_pb2.StreamChatCompletionRequest, context: Any) -> Any:
        generate = functools.partial(chat.stream_chat_completion, self._models)
        async for chunk in self._stored.stream(request, generate):
            yield chunk

    @unary
    async def GetChatCompletion(self, request: chat_pb2.GetChatCompletionRequest, context: Any) -> Any:
        return await self._stored.get(request)

    @unary
    async def ListChatCompletions(self, request: chat_pb2.ListChatCompletionsRequest, context: Any) -> Any:
        return await self._stored.list_completions(request)

    @unary
    async def ListChatCompletionMessages(
        self, request: chat_pb2.ListChatCompletionMessagesRequest, context: Any
    ) -> Any:
        return await self._stored.messages(request)

    @unary
    async def UpdateChatCompletion(self, request: chat_pb2.UpdateChatCompletionRequest, context: Any) -> Any:
        return await self._stored.update(request)

    @unary
    async def DeleteChatCompletion(self, request: chat_pb2.DeleteChatCompletionRequest, context: Any) -> Any:
        return await self._stored.delete(request)


class ModelServicer(model_pb2_grpc.ModelServiceServicer):
    """ovserve.v1.ModelService."""

    def __init__(self, registry: ModelRegistry) -> None:
        self._models = registry

    @unary
    async def ListModels(self, request: model_pb2.ListModelsRequest, context: Any) -> Any:
        return models.list_models(self._models)

    @unary
    async def GetModel(self, request: model_pb2.GetModelRequest, context: Any) -> Any:
        return models.get_model(self._models, request)


class TokenizerServicer(tokenizer_pb2_grpc.TokenizerServiceServicer):
    """ovserve.v1.TokenizerService."""

    def __init__(self, registry: ModelRegistry) -> None:
        self._models = registry

    @unary
    async def Tokenize(self, request: tokenizer_pb2.TokenizeRequest, context: Any) -> Any:
        return await tokenizer.tokenize(self._models, request)

    @unary
    async def Detokenize(self, request: tokenizer_pb2.DetokenizeRequest, context: Any) -> Any:
        return await tokenizer.detokenize(self._models, request)


class EmbeddingServicer(embedding_pb2_grpc.EmbeddingServiceServicer):
    """ovserve.v1.EmbeddingService."""

    def __init__(self, registry: ModelRegistry) -> None:
        self._models = registry

    @unary
    async def CreateEmbedding(self, request: embedding_pb2.CreateEmbeddingRequest, context: Any) -> Any:
        return await embeddings.create_embedding(self._models, request)


class RerankServicer(rerank_pb2_grpc.RerankServiceServicer):
    """ovserve.v1.RerankService."""

    def __init__(self, registry: ModelRegistry) -> None:
        self._models = registry

    @unary
    async def Rerank(self, request: rerank_pb2.RerankRequest, context: Any) -> Any:
        return await rerank.rerank(self._models, request)

    @unary
    async def Score(self, request: rerank_pb2.ScoreRequest, context: Any) -> Any:
        return await rerank.score(self._models, request)


class AudioServicer(audio_pb2_grpc.AudioServiceServicer):
    """ovserve.v1.AudioService."""

    def __init__(self, registry: ModelRegistry) -> None:
        self._models = registry

    @unary
    async def CreateTranscription(self, request: audio_pb2.CreateTranscriptionRequest, context: Any) -> Any:
        return await transcriptions.create_transcription(self._models, request)

    @streaming
    async def StreamTranscription(
        self, request: audio_pb2.StreamTranscriptionRequest, context: Any
    ) -> AsyncGenerator[Any, None]:
        async for event in transcriptions.stream_transcription(self._models, request):
            yield event


class ResponseServicer(response_pb2_grpc.ResponseServiceServicer):
    """ovserve.v1.ResponseService."""

    def __init__(self, api: ResponsesApi) -> None:
        self._api = api

    @unary
    async def CreateResponse(self, request: response_pb2.CreateResponseRequest, context: Any) -> Any:
        return response_pb2.CreateResponseResponse(response=await self._api.create(request))

    @streaming
    async def StreamResponse(self, request: response_pb2.StreamResponseRequest, context: Any) -> Any:
        async for event in self._api.stream(request):
            yield response_pb2.StreamResponseResponse(event=event)

    @unary
    async def GetResponse(self, request: response_pb2.GetResponseRequest, context: Any) -> Any:
        return response_pb2.GetResponseResponse(response=await self._api.get(request.response_id))

    @streaming
    async def ResumeResponseStream(self, request: response_pb2.ResumeResponseStreamRequest, context: Any) -> Any:
        after = request.starting_after if request.HasField("starting_after") else None
        async for event in self._api.resume(request.response_id, after):
            yield response_pb2.ResumeResponseStreamResponse(event=event)

    @unary
    async def DeleteResponse(self, request: response_pb2.DeleteResponseRequest, context: Any) -> Any:
        return await self._api.delete(request.response_id)

    @unary
    async def CancelResponse(self, request: response_pb2.CancelResponseRequest, context: Any) -> Any:
        return response_pb2.CancelResponseResponse(response=await self._api.cancel(request.response_id))

    @unary
    async def ListResponseInputItems(self, request: response_pb2.ListResponseInputItemsRequest, context: Any) -> Any:
        return await self._api.input_items(request)

    @unary
    async def CountResponseInputTokens(
        self, request: response_pb2.CountResponseInputTokensRequest, context: Any
    ) -> Any:
        return await self._api.count_input_tokens(request)

    @unary
    async def CompactResponse(self, request: response_pb2.CompactResponseRequest, context: Any) -> Any:
        return await self._api.compact(request)


class ConversationServicer(conversation_pb2_grpc.ConversationServiceServicer):
    """ovserve.v1.ConversationService."""

    def __init__(self, api: ConversationsApi) -> None:
        self._api = api

    @unary
    async def CreateConversation(self, request: conversation_pb2.CreateConversationRequest, context: Any) -> Any:
        return conversation_pb2.CreateConversationResponse(conversation=await self._api.create(request))

    @unary
    async def GetConversation(self, request: conversation_pb2.GetConversationRequest, context: Any) -> Any:
        return conversation_pb2.GetConversationResponse(conversation=await self._api.get(request.conversation_id))

    @unary
    async def UpdateConversation(self, request: conversation_pb2.UpdateConversationRequest, context: Any) -> Any:
        return conversation_pb2.UpdateConversationResponse(conversation=await self._api.update(request))

    @unary
    async def DeleteConversation(self, request: conversation_pb2.DeleteConversationRequest, context: Any) -> Any:
        return await self._api.delete(request.conversation_id)

    @unary
    async def ListConversationItems(self, request: conversation_pb2.ListConversationItemsRequest, context: Any) -> Any:
        return await self._api.list_items(request)

    @unary
    async def CreateConversationItems(
        self, request: conversation_pb2.CreateConversationItemsRequest, context: Any
    ) -> Any:
        return await self._api.add_items(request)

    @unary
    async def GetConversationItem(self, request: conversation_pb2.GetConversationItemRequest, context: Any) -> Any:
        return conversation_pb2.GetConversationItemResponse(item=await self._api.get_item(request))

    @unary
    async def DeleteConversationItem(
        self, request: conversation_pb2.DeleteConversationItemRequest, context: Any
    ) -> Any:
        return conversation_pb2.DeleteConversationItemResponse(conversation=await self._api.delete_item(request))
