"""The gRPC servicers: thin adapters from RPCs to the API layer, plus error mapping.

Each method reads like a table of contents: call the API function, return or
yield what it gives. ServiceError becomes its own status code with google.rpc
details; anything unexpected is logged and becomes INTERNAL. CancelledError
(the client went away) and AbortError pass through untouched.

Which service each servicer implements, and how the server builds it, is
``ovserve.service.server.services``; a servicer that lacks an RPC of its service
fails the server's start (its ``add_*_to_server`` looks every RPC up).
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc

from ovserve.clients.v1 import batch_pb2, chat_pb2, conversation_pb2, file_pb2, model_pb2, response_pb2
from ovserve.service.api import (
    chat,
    completions,
    embeddings,
    images,
    models,
    rerank,
    speech,
    tokenizer,
    transcriptions,
)
from ovserve.service.api.files import FilesApi
from ovserve.service.api.lora import RuntimeLora
from ovserve.service.api.stored_chat import StoredChatCompletions
from ovserve.service.batches.api import BatchesApi
from ovserve.service.errors import ServiceError, to_rpc_status
from ovserve.service.models import ModelRegistry
from ovserve.service.responses.api import ResponsesApi
from ovserve.service.responses.conversations import ConversationsApi
from ovserve.service.server.config_reload import ConfigReload
from ovserve.service.server.model_admin import ModelAdmin

log = logging.getLogger(__name__)
Response = TypeVar("Response")
Handler = Callable[[Any, Any, grpc.aio.ServicerContext], Any]  # an RPC method: (servicer, request, context)


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


class _RegistryServicer:
    """A servicer whose RPCs the API layer answers from the served models alone: ``api(registry, request)``."""

    def __init__(self, registry: ModelRegistry) -> None:
        self._models = registry


def _answered_by(api: Callable[[ModelRegistry, Any], Awaitable[Any]]) -> Handler:
    """A unary RPC of a _RegistryServicer: the reply of ``api(registry, request)``."""

    @unary
    async def rpc(self: _RegistryServicer, request: Any, context: Any) -> Any:
        return await api(self._models, request)

    return rpc


def _streamed_by(api: Callable[[ModelRegistry, Any], AsyncIterator[Any]]) -> Handler:
    """A server-streaming RPC of a _RegistryServicer: the messages of ``api(registry, request)``."""

    @streaming
    async def rpc(self: _RegistryServicer, request: Any, context: Any) -> AsyncGenerator[Any, None]:
        async for message in api(self._models, request):
            yield message

    return rpc


class CompletionServicer(_RegistryServicer):
    """ovserve.v1.CompletionService."""

    CreateCompletion = _answered_by(completions.create_completion)
    StreamCompletion = _streamed_by(completions.stream_completion)


class TokenizerServicer(_RegistryServicer):
    """ovserve.v1.TokenizerService."""

    Tokenize = _answered_by(tokenizer.tokenize)
    Detokenize = _answered_by(tokenizer.detokenize)


class EmbeddingServicer(_RegistryServicer):
    """ovserve.v1.EmbeddingService."""

    CreateEmbedding = _answered_by(embeddings.create_embedding)


class RerankServicer(_RegistryServicer):
    """ovserve.v1.RerankService."""

    Rerank = _answered_by(rerank.rerank)
    Score = _answered_by(rerank.score)


class AudioServicer(_RegistryServicer):
    """ovserve.v1.AudioService."""

    CreateTranscription = _answered_by(transcriptions.create_transcription)
    StreamTranscription = _streamed_by(transcriptions.stream_transcription)
    CreateTranslation = _answered_by(transcriptions.create_translation)


class SpeechServicer(_RegistryServicer):
    """ovserve.v1.SpeechService."""

    CreateSpeech = _answered_by(speech.create_speech)
    StreamSpeech = _streamed_by(speech.stream_speech)


class ImageServicer(_RegistryServicer):
    """ovserve.v1.ImageService."""

    CreateImage = _answered_by(images.create_image)
    StreamImage = _streamed_by(images.stream_image)
    CreateImageEdit = _answered_by(images.create_image_edit)
    StreamImageEdit = _streamed_by(images.stream_image_edit)


class ModelServicer(_RegistryServicer):
    """ovserve.v1.ModelService."""

    def __init__(self, registry: ModelRegistry, lora: RuntimeLora, admin: ModelAdmin, reloader: ConfigReload) -> None:
        super().__init__(registry)
        self._lora = lora
        self._admin = admin
        self._reloader = reloader

    @unary
    async def LoadLoraAdapter(self, request: model_pb2.LoadLoraAdapterRequest, context: Any) -> Any:
        return model_pb2.LoadLoraAdapterResponse(model=await self._lora.load(request))

    @unary
    async def UnloadLoraAdapter(self, request: model_pb2.UnloadLoraAdapterRequest, context: Any) -> Any:
        return await self._lora.unload(request)

    @streaming
    async def LoadModel(self, request: model_pb2.LoadModelRequest, context: Any) -> AsyncGenerator[Any, None]:
        async for event in self._admin.stream_load(request):
            yield event

    @unary
    async def UnloadModel(self, request: model_pb2.UnloadModelRequest, context: Any) -> Any:
        return await self._admin.unload(request)

    @unary
    async def ReloadConfig(self, request: model_pb2.ReloadConfigRequest, context: Any) -> Any:
        return await self._reloader.reload()

    @unary
    async def ListModels(self, request: model_pb2.ListModelsRequest, context: Any) -> Any:
        return models.list_models(self._models)

    @unary
    async def GetModel(self, request: model_pb2.GetModelRequest, context: Any) -> Any:
        return models.get_model(self._models, request)


class ChatServicer:
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


class ResponseServicer:
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


class ConversationServicer:
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


class FileServicer:
    """ovserve.v1.FileService."""

    def __init__(self, api: FilesApi) -> None:
        self._api = api

    @unary
    async def CreateFile(self, requests: AsyncIterator[file_pb2.CreateFileRequest], context: Any) -> Any:
        return file_pb2.CreateFileResponse(file=await self._api.create(requests))

    @unary
    async def GetFile(self, request: file_pb2.GetFileRequest, context: Any) -> Any:
        return file_pb2.GetFileResponse(file=await self._api.get(request.file_id))

    @unary
    async def ListFiles(self, request: file_pb2.ListFilesRequest, context: Any) -> Any:
        return await self._api.list(request)

    @unary
    async def DeleteFile(self, request: file_pb2.DeleteFileRequest, context: Any) -> Any:
        return await self._api.delete(request.file_id)

    @streaming
    async def GetFileContent(self, request: file_pb2.GetFileContentRequest, context: Any) -> Any:
        async for message in self._api.download(request.file_id):
            yield message


class BatchServicer:
    """ovserve.v1.BatchService."""

    def __init__(self, api: BatchesApi) -> None:
        self._api = api

    @unary
    async def CreateBatch(self, request: batch_pb2.CreateBatchRequest, context: Any) -> Any:
        return batch_pb2.CreateBatchResponse(batch=await self._api.create(request))

    @unary
    async def GetBatch(self, request: batch_pb2.GetBatchRequest, context: Any) -> Any:
        return batch_pb2.GetBatchResponse(batch=await self._api.get(request.batch_id))

    @unary
    async def ListBatches(self, request: batch_pb2.ListBatchesRequest, context: Any) -> Any:
        return await self._api.list(request)

    @unary
    async def CancelBatch(self, request: batch_pb2.CancelBatchRequest, context: Any) -> Any:
        return batch_pb2.CancelBatchResponse(batch=await self._api.cancel(request.batch_id))
