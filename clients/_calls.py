"""What each typed-client method calls, written once for ``OvserveClient`` and ``AsyncOvserveClient``.

A function here is one client method: it takes the client's stubs and the
method's own arguments, builds the request (``ovserve.clients._requests``) and returns
the call to make: the stub's method, the request, the call's own deadline and
what of the reply the caller gets. ``ovserve.clients.client`` makes each call
blocking or with grpc.aio; its docstring is the method's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Generic, TypeVar

import grpc
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ovserve.clients._requests import (
    ChatMessageLike,
    InputItemLike,
    Prompt,
    chat_request,
    completion_request,
    embedding_request,
    image_request,
    input_items,
    rerank_request,
    speech_request,
    transcription_request,
)
from ovserve.clients.defaults import FILE_CHUNK_BYTES
from ovserve.clients.services import Service
from ovserve.clients.v1 import (
    audio_pb2,
    batch_pb2,
    chat_pb2,
    completion_pb2,
    conversation_pb2,
    embedding_pb2,
    file_pb2,
    image_pb2,
    model_pb2,
    rerank_pb2,
    speech_pb2,
)
from ovserve.clients.v1 import response_object_pb2 as objects_pb2

Result = TypeVar("Result")


def _whole(reply: Any) -> Any:
    return reply


@dataclass(frozen=True)
class Call(Generic[Result]):
    """A unary call: ``rpc(request)``, and what of its reply the caller gets."""

    rpc: Callable[..., Any]  # a stub's method
    request: Message | list[Message]  # a list: the messages of a client stream (an upload)
    timeout: float | None  # the call's own deadline; None: the client's
    result: Callable[[Any], Result] = _whole


@dataclass(frozen=True)
class Stream(Generic[Result]):
    """A server-streaming call: ``rpc(request)``, whose messages (``Result``) the caller iterates."""

    rpc: Callable[..., Any]
    request: Message
    timeout: float | None


class Stubs:
    """A stub of every service of the contract on one channel (sync or grpc.aio), and of gRPC's health service."""

    def __init__(self, channel: grpc.Channel | grpc.aio.Channel) -> None:
        self._by_service = {service: service.stub(channel) for service in Service}
        self.health = health_pb2_grpc.HealthStub(channel)

    def __getitem__(self, service: Service) -> Any:
        return self._by_service[service]


# ---- completions and chat ----


def chat(
    stubs: Stubs, /, model: str, messages: Iterable[ChatMessageLike], *, timeout: float | None = None, **params: Any
) -> Call[chat_pb2.CreateChatCompletionResponse]:
    """The model's reply to ``messages`` (dicts in OpenAI's shape or ChatMessage), once complete."""
    request = chat_request(chat_pb2.CreateChatCompletionRequest, model, messages, params)
    return Call(stubs[Service.CHAT].CreateChatCompletion, request, timeout)


def stream_chat(
    stubs: Stubs, /, model: str, messages: Iterable[ChatMessageLike], *, timeout: float | None = None, **params: Any
) -> Stream[chat_pb2.StreamChatCompletionResponse]:
    """The model's reply as chunks while it is generated; leaving the loop early cancels the call."""
    request = chat_request(chat_pb2.StreamChatCompletionRequest, model, messages, params)
    return Stream(stubs[Service.CHAT].StreamChatCompletion, request, timeout)


def complete(
    stubs: Stubs, /, model: str, prompt: Prompt, *, timeout: float | None = None, **params: Any
) -> Call[completion_pb2.CreateCompletionResponse]:
    """Completion of ``prompt``: a string, strings, token ids or token-id lists (one choice per prompt)."""
    request = completion_request(completion_pb2.CreateCompletionRequest, model, prompt, params)
    return Call(stubs[Service.COMPLETION].CreateCompletion, request, timeout)


def stream_complete(
    stubs: Stubs, /, model: str, prompt: Prompt, *, timeout: float | None = None, **params: Any
) -> Stream[completion_pb2.StreamCompletionResponse]:
    """Completion of ``prompt`` as chunks while it is generated; leaving the loop early cancels the call."""
    request = completion_request(completion_pb2.StreamCompletionRequest, model, prompt, params)
    return Stream(stubs[Service.COMPLETION].StreamCompletion, request, timeout)


# ---- embeddings, rerank, transcription (models of those tasks) ----


def embed(
    stubs: Stubs, /, model: str, inputs: Prompt, *, timeout: float | None = None, **params: Any
) -> Call[embedding_pb2.CreateEmbeddingResponse]:
    """One vector per input: a string, strings, token ids or token-id lists (``input_type``, ``dimensions``)."""
    return Call(stubs[Service.EMBEDDING].CreateEmbedding, embedding_request(model, inputs, params), timeout)


def rerank(
    stubs: Stubs, /, model: str, query: str, documents: Iterable[str], *, timeout: float | None = None, **params: Any
) -> Call[rerank_pb2.RerankResponse]:
    """``documents`` ranked by relevance to ``query``, best first (``top_n``, ``return_documents``)."""
    return Call(stubs[Service.RERANK].Rerank, rerank_request(model, query, documents, params), timeout)


def transcribe(
    stubs: Stubs, /, model: str, audio: bytes, *, timeout: float | None = None, **params: Any
) -> Call[audio_pb2.CreateTranscriptionResponse]:
    """The transcript of an audio file's bytes (``language``, ``prompt``, ``timestamp_granularities``...)."""
    request = transcription_request(audio_pb2.CreateTranscriptionRequest, model, audio, params)
    return Call(stubs[Service.AUDIO].CreateTranscription, request, timeout)


def stream_transcription(
    stubs: Stubs, /, model: str, audio: bytes, *, timeout: float | None = None, **params: Any
) -> Stream[audio_pb2.StreamTranscriptionResponse]:
    """The transcript as deltas while it is decoded, then the whole of it; leaving the loop cancels the call."""
    request = transcription_request(audio_pb2.StreamTranscriptionRequest, model, audio, params)
    return Stream(stubs[Service.AUDIO].StreamTranscription, request, timeout)


def translate(
    stubs: Stubs, /, model: str, audio: bytes, *, timeout: float | None = None, **params: Any
) -> Call[audio_pb2.CreateTranslationResponse]:
    """The speech of an audio file's bytes in English (``prompt``, ``temperature``, ``response_format``)."""
    request = transcription_request(audio_pb2.CreateTranslationRequest, model, audio, params)
    return Call(stubs[Service.AUDIO].CreateTranslation, request, timeout)


# ---- images (diffusion models) ----


def generate_image(
    stubs: Stubs, /, model: str, prompt: str, *, timeout: float | None = None, **params: Any
) -> Call[image_pb2.CreateImageResponse]:
    """The images ``prompt`` describes (``n``, ``size``, ``num_inference_steps``, ``rng_seed``...)."""
    request = image_request(image_pb2.CreateImageRequest, model, prompt, params)
    return Call(stubs[Service.IMAGE].CreateImage, request, timeout)


def stream_image(
    stubs: Stubs, /, model: str, prompt: str, *, timeout: float | None = None, **params: Any
) -> Stream[image_pb2.StreamImageResponse]:
    """Partial images (``partial_images`` of them) while the model denoises, then the image."""
    request = image_request(image_pb2.StreamImageRequest, model, prompt, params)
    return Stream(stubs[Service.IMAGE].StreamImage, request, timeout)


def edit_image(
    stubs: Stubs,
    /,
    model: str,
    prompt: str,
    images: bytes | Iterable[bytes],
    *,
    mask: bytes | None = None,
    timeout: float | None = None,
    **params: Any,
) -> Call[image_pb2.CreateImageEditResponse]:
    """``images`` (encoded files' bytes) redrawn as ``prompt`` says; only where ``mask`` is transparent if given."""
    files = [images] if isinstance(images, bytes) else list(images)
    request = image_request(image_pb2.CreateImageEditRequest, model, prompt, params, files, mask)
    return Call(stubs[Service.IMAGE].CreateImageEdit, request, timeout)


def stream_image_edit(
    stubs: Stubs, /, model: str, prompt: str, image: bytes, *, mask: bytes | None = None,
    timeout: float | None = None, **params: Any,
) -> Stream[image_pb2.StreamImageEditResponse]:  # fmt: skip
    """An edit's partial images, then the edited image."""
    request = image_request(image_pb2.StreamImageEditRequest, model, prompt, params, [image], mask)
    return Stream(stubs[Service.IMAGE].StreamImageEdit, request, timeout)


# ---- speech (text-to-speech models) ----


def speak(
    stubs: Stubs, /, model: str, text: str, *, timeout: float | None = None, **params: Any
) -> Call[speech_pb2.CreateSpeechResponse]:
    """``text`` said by a text-to-speech model: the encoded audio (``voice``, ``response_format``, ``speed``)."""
    return Call(
        stubs[Service.SPEECH].CreateSpeech, speech_request(speech_pb2.CreateSpeechRequest, model, text, params), timeout
    )


def stream_speech(
    stubs: Stubs, /, model: str, text: str, *, timeout: float | None = None, **params: Any
) -> Stream[speech_pb2.StreamSpeechResponse]:
    """``text`` said in pieces of audio, then the rest of the response; leaving the loop cancels the call."""
    return Stream(
        stubs[Service.SPEECH].StreamSpeech, speech_request(speech_pb2.StreamSpeechRequest, model, text, params), timeout
    )


# ---- models and health ----


def list_models(stubs: Stubs, /, *, timeout: float | None = None) -> Call[list[model_pb2.Model]]:
    """The served models."""
    return Call(stubs[Service.MODEL].ListModels, model_pb2.ListModelsRequest(), timeout, lambda reply: list(reply.data))


def get_model(stubs: Stubs, /, model: str, *, timeout: float | None = None) -> Call[model_pb2.Model]:
    """One served model; NOT_FOUND if it is not served."""
    return Call(stubs[Service.MODEL].GetModel, model_pb2.GetModelRequest(model=model), timeout, attrgetter("model"))


def health(stubs: Stubs, /, service: str = "", *, timeout: float | None = None) -> Call[str]:
    """The standard gRPC health status of the server (or one service): "SERVING", "NOT_SERVING", ..."""
    return Call(stubs.health.Check, health_pb2.HealthCheckRequest(service=service), timeout, _status_name)


def _status_name(reply: health_pb2.HealthCheckResponse) -> str:
    return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)


# ---- conversations (ConversationService; items are Responses input items, dicts in OpenAI's shape) ----


def create_conversation(
    stubs: Stubs,
    /,
    items: Iterable[InputItemLike] = (),
    *,
    metadata: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> Call[conversation_pb2.Conversation]:
    """A new conversation holding ``items`` (at most 20)."""
    request = conversation_pb2.CreateConversationRequest(items=input_items(items), metadata=metadata)
    return Call(stubs[Service.CONVERSATION].CreateConversation, request, timeout, attrgetter("conversation"))


def get_conversation(
    stubs: Stubs, /, conversation_id: str, *, timeout: float | None = None
) -> Call[conversation_pb2.Conversation]:
    """A conversation; NOT_FOUND if unknown (or another API key's)."""
    request = conversation_pb2.GetConversationRequest(conversation_id=conversation_id)
    return Call(stubs[Service.CONVERSATION].GetConversation, request, timeout, attrgetter("conversation"))


def update_conversation(
    stubs: Stubs, /, conversation_id: str, metadata: Mapping[str, str], *, timeout: float | None = None
) -> Call[conversation_pb2.Conversation]:
    """Replace a conversation's metadata."""
    request = conversation_pb2.UpdateConversationRequest(conversation_id=conversation_id, metadata=metadata)
    return Call(stubs[Service.CONVERSATION].UpdateConversation, request, timeout, attrgetter("conversation"))


def delete_conversation(
    stubs: Stubs, /, conversation_id: str, *, timeout: float | None = None
) -> Call[conversation_pb2.DeleteConversationResponse]:
    """Delete a conversation and its items."""
    request = conversation_pb2.DeleteConversationRequest(conversation_id=conversation_id)
    return Call(stubs[Service.CONVERSATION].DeleteConversation, request, timeout)


def list_conversation_items(
    stubs: Stubs,
    /,
    conversation_id: str,
    *,
    after: str | None = None,
    limit: int | None = None,
    order: str | None = None,
    timeout: float | None = None,
) -> Call[conversation_pb2.ListConversationItemsResponse]:
    """One page of a conversation's items (newest first unless ``order="asc"``)."""
    request = conversation_pb2.ListConversationItemsRequest(
        conversation_id=conversation_id,
        after=after,
        limit=limit,
        order=order,  # None: the field stays unset
    )
    return Call(stubs[Service.CONVERSATION].ListConversationItems, request, timeout)


def add_conversation_items(
    stubs: Stubs, /, conversation_id: str, items: Iterable[InputItemLike], *, timeout: float | None = None
) -> Call[list[objects_pb2.InputItem]]:
    """Append items (at most 20) to a conversation; returns them with their ids."""
    request = conversation_pb2.CreateConversationItemsRequest(conversation_id=conversation_id, items=input_items(items))
    return Call(stubs[Service.CONVERSATION].CreateConversationItems, request, timeout, lambda reply: list(reply.data))


def get_conversation_item(
    stubs: Stubs, /, conversation_id: str, item_id: str, *, timeout: float | None = None
) -> Call[objects_pb2.InputItem]:
    """One item of a conversation."""
    request = conversation_pb2.GetConversationItemRequest(conversation_id=conversation_id, item_id=item_id)
    return Call(stubs[Service.CONVERSATION].GetConversationItem, request, timeout, attrgetter("item"))


def delete_conversation_item(
    stubs: Stubs, /, conversation_id: str, item_id: str, *, timeout: float | None = None
) -> Call[conversation_pb2.Conversation]:
    """Delete one item of a conversation; returns the conversation."""
    request = conversation_pb2.DeleteConversationItemRequest(conversation_id=conversation_id, item_id=item_id)
    return Call(stubs[Service.CONVERSATION].DeleteConversationItem, request, timeout, attrgetter("conversation"))


# ---- files (FileService) ----


def upload_file(
    stubs: Stubs,
    /,
    data: bytes,
    filename: str,
    purpose: str,
    *,
    expires_after_seconds: int | None = None,
    timeout: float | None = None,
) -> Call[file_pb2.File]:
    """Store ``data`` as a file ("user_data", "assistants", "vision" or "batch"); its record, with its id."""
    header = file_pb2.FileHeader(filename=filename, purpose=purpose, bytes=len(data))
    if expires_after_seconds is not None:
        header.expires_after.anchor, header.expires_after.seconds = "created_at", expires_after_seconds
    chunks = [
        file_pb2.CreateFileRequest(chunk=data[at : at + FILE_CHUNK_BYTES])
        for at in range(0, len(data), FILE_CHUNK_BYTES)
    ]
    return Call(
        stubs[Service.FILE].CreateFile,
        [file_pb2.CreateFileRequest(header=header), *chunks],
        timeout,
        attrgetter("file"),
    )


def get_file(stubs: Stubs, /, file_id: str, *, timeout: float | None = None) -> Call[file_pb2.File]:
    """A file's record; NOT_FOUND if unknown (or another API key's)."""
    return Call(stubs[Service.FILE].GetFile, file_pb2.GetFileRequest(file_id=file_id), timeout, attrgetter("file"))


def list_files(
    stubs: Stubs,
    /,
    *,
    purpose: str | None = None,
    after: str | None = None,
    limit: int | None = None,
    order: str | None = None,
    timeout: float | None = None,
) -> Call[file_pb2.ListFilesResponse]:
    """One page of the caller's files (newest first unless ``order="asc"``)."""
    request = file_pb2.ListFilesRequest(purpose=purpose, after=after, limit=limit, order=order)
    return Call(stubs[Service.FILE].ListFiles, request, timeout)


def delete_file(stubs: Stubs, /, file_id: str, *, timeout: float | None = None) -> Call[file_pb2.DeleteFileResponse]:
    """Delete a file and its bytes."""
    return Call(stubs[Service.FILE].DeleteFile, file_pb2.DeleteFileRequest(file_id=file_id), timeout)


def download_file(
    stubs: Stubs, /, file_id: str, *, timeout: float | None = None
) -> Stream[file_pb2.GetFileContentResponse]:
    """A file's bytes as they come, in chunks of at most 1 MiB (``b"".join(m.chunk for m in ...)``)."""
    return Stream(stubs[Service.FILE].GetFileContent, file_pb2.GetFileContentRequest(file_id=file_id), timeout)


# ---- batches (BatchService; the input file uploaded with upload_file, purpose "batch") ----


def create_batch(
    stubs: Stubs,
    /,
    input_file_id: str,
    endpoint: str,
    *,
    metadata: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> Call[batch_pb2.Batch]:
    """Run the requests of an uploaded JSONL file (OpenAI's request lines) in the background; the new batch."""
    request = batch_pb2.CreateBatchRequest(
        input_file_id=input_file_id, endpoint=endpoint, completion_window="24h", metadata=metadata
    )
    return Call(stubs[Service.BATCH].CreateBatch, request, timeout, attrgetter("batch"))


def get_batch(stubs: Stubs, /, batch_id: str, *, timeout: float | None = None) -> Call[batch_pb2.Batch]:
    """A batch: its status, counts and, once it ended, its output and error files."""
    return Call(
        stubs[Service.BATCH].GetBatch, batch_pb2.GetBatchRequest(batch_id=batch_id), timeout, attrgetter("batch")
    )


def list_batches(
    stubs: Stubs, /, *, after: str | None = None, limit: int | None = None, timeout: float | None = None
) -> Call[batch_pb2.ListBatchesResponse]:
    """One page of the caller's batches, newest first."""
    return Call(stubs[Service.BATCH].ListBatches, batch_pb2.ListBatchesRequest(after=after, limit=limit), timeout)


def cancel_batch(stubs: Stubs, /, batch_id: str, *, timeout: float | None = None) -> Call[batch_pb2.Batch]:
    """Cancel a batch: lines not started do not run; it ends "cancelled" with its files."""
    request = batch_pb2.CancelBatchRequest(batch_id=batch_id)
    return Call(stubs[Service.BATCH].CancelBatch, request, timeout, attrgetter("batch"))


# ---- LoRA adapters at run time (ModelService; the server runs with --allow-runtime-lora DIR) ----


def load_lora_adapter(
    stubs: Stubs,
    /,
    lora_name: str,
    lora_path: str,
    *,
    base_model_name: str | None = None,
    load_inplace: bool = False,
    timeout: float | None = None,
) -> Call[model_pb2.Model]:
    """Serve the PEFT adapter at ``lora_path`` (under the server's allowed directory) as model ``lora_name``."""
    request = model_pb2.LoadLoraAdapterRequest(
        lora_name=lora_name, lora_path=lora_path, load_inplace=load_inplace, base_model_name=base_model_name
    )
    return Call(stubs[Service.MODEL].LoadLoraAdapter, request, timeout, attrgetter("model"))


def unload_lora_adapter(
    stubs: Stubs, /, lora_name: str, *, timeout: float | None = None
) -> Call[model_pb2.UnloadLoraAdapterResponse]:
    """Stop serving the LoRA adapter ``lora_name``."""
    request = model_pb2.UnloadLoraAdapterRequest(lora_name=lora_name)
    return Call(stubs[Service.MODEL].UnloadLoraAdapter, request, timeout)


# ---- models loaded and unloaded at run time (ModelService; with keys on, an admin key: --admin-key-file) ----


def load_model(
    stubs: Stubs,
    /,
    model: str,
    *,
    source: str | None = None,
    settings: dict[str, Any] | None = None,
    timeout: float | None = None,
) -> Stream[model_pb2.LoadModelResponse]:
    """Load ``model``: its progress events, "loading" then "loaded" (whose ``model`` is the model as list_models
    shows it). A model not declared at start needs its ``source`` (as ``--model NAME=SOURCE`` takes it) and may
    take ``settings`` (a TOML ``[[models]]`` entry's keys: tool_parser, weight_format...)."""
    request = model_pb2.LoadModelRequest(model=model, source=source or "")
    if settings is not None:
        request.settings.update(settings)
    return Stream(stubs[Service.MODEL].LoadModel, request, timeout)


def unload_model(
    stubs: Stubs, /, model: str, *, force: bool = False, timeout: float | None = None
) -> Call[model_pb2.Model]:
    """Unload ``model`` once its running requests end (``force``: fail them now); the model, "available" again."""
    request = model_pb2.UnloadModelRequest(model=model, force=force)
    return Call(stubs[Service.MODEL].UnloadModel, request, timeout, attrgetter("model"))


def reload_config(stubs: Stubs, /, *, timeout: float | None = None) -> Call[model_pb2.ReloadConfigResponse]:
    """Have the server read its TOML file (``--config``) again and apply what changed in its models: the reply
    says what happened to each model (``models``: added, removed, changed, unchanged, kept; ``error`` when it
    failed) and which server settings need a restart (``restart_required``)."""
    return Call(stubs[Service.MODEL].ReloadConfig, model_pb2.ReloadConfigRequest(), timeout)
