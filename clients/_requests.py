"""Request building shared by the sync and asyncio clients: Python values in OpenAI's shapes -> proto requests.

OpenAI's polymorphic fields become the proto's simple or typed form through
the table the REST bridge uses too (``ovserve.clients.polymorphic``): ``stop``
(string or list) -> ``stop`` / ``stop_sequences``, message ``content`` (string
or parts) -> ``content`` / ``content_parts``, ``prompt`` (string, strings,
token ids, token-id lists) -> ``prompt`` / ``prompts``, ``tool_choice``
(string or object) -> ``tool_choice`` / ``named_tool_choice``. A value in
neither form raises ``polymorphic.FormError`` (a TypeError and a ValueError).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeAlias, TypeVar

from google.protobuf import json_format
from google.protobuf.message import Message

from ovserve.clients import polymorphic
from ovserve.clients.v1 import chat_pb2, embedding_pb2, image_pb2, rerank_pb2
from ovserve.clients.v1 import response_object_pb2 as objects_pb2

Request = TypeVar("Request", bound=Message)
ChatMessageLike: TypeAlias = Mapping[str, Any] | chat_pb2.ChatMessage
InputItemLike: TypeAlias = Mapping[str, Any] | objects_pb2.InputItem
Prompt: TypeAlias = str | Sequence[str] | Sequence[int] | Sequence[Sequence[int]]

# Request fields that are not keyword parameters: positional arguments, or
# decided by the method called (stream_chat streams; chat does not).
_NOT_PARAMS = frozenset({"model", "messages", "prompt", "prompts", "stream", "input", "input_prompts", "query",
                         "documents", "file"})  # fmt: skip


def chat_request(
    message_class: type[Request], model: str, messages: Iterable[ChatMessageLike], params: Mapping[str, Any]
) -> Request:
    """A Create/StreamChatCompletionRequest; raises TypeError for unknown params, ValueError for bad values."""
    request = _with_params(message_class, model, params)
    for index, message in enumerate(messages):
        request.messages.append(_chat_message(message, index))  # type: ignore[attr-defined]
    return request


def completion_request(message_class: type[Request], model: str, prompt: Prompt, params: Mapping[str, Any]) -> Request:
    """A Create/StreamCompletionRequest; raises TypeError for unknown params or a prompt of the wrong shape."""
    request = _with_params(message_class, model, params)
    return _parse(polymorphic.normalise({"prompt": prompt}, message_class.DESCRIPTOR), request, "prompt")


def embedding_request(model: str, inputs: Prompt, params: Mapping[str, Any]) -> embedding_pb2.CreateEmbeddingRequest:
    """A CreateEmbeddingRequest: ``inputs`` a string, strings, token ids or token-id lists."""
    request = _with_params(embedding_pb2.CreateEmbeddingRequest, model, params)
    return _parse(polymorphic.normalise({"input": inputs}, request.DESCRIPTOR), request, "input")


def rerank_request(
    model: str, query: str, documents: Iterable[str], params: Mapping[str, Any]
) -> rerank_pb2.RerankRequest:
    """A RerankRequest of ``query`` against ``documents`` (their texts)."""
    request = _with_params(rerank_pb2.RerankRequest, model, params)
    return _parse({"query": query, "documents": [{"text": text} for text in documents]}, request, "documents")


def transcription_request(message_class: type[Request], model: str, audio: bytes, params: Mapping[str, Any]) -> Request:
    """A Create/StreamTranscriptionRequest or CreateTranslationRequest of an audio file's bytes."""
    request = _with_params(message_class, model, params)
    request.file = audio  # type: ignore[attr-defined]
    return request


def speech_request(message_class: type[Request], model: str, text: str, params: Mapping[str, Any]) -> Request:
    """A Create/StreamSpeechRequest saying ``text`` (``voice``, ``response_format``, ``speed`` in ``params``)."""
    request = _with_params(message_class, model, params)
    request.input = text  # type: ignore[attr-defined]
    return request


def image_request(
    message_class: type[Request],
    model: str,
    prompt: str,
    params: Mapping[str, Any],
    images: Iterable[bytes] = (),
    mask: bytes | None = None,
) -> Request:
    """A Create/StreamImage or Create/StreamImageEdit request: ``params`` are ImageParameters' fields (``size``,
    ``n``, ``num_inference_steps``, ``rng_seed``...); an edit's ``images`` and ``mask`` are encoded files' bytes."""
    fields = image_pb2.ImageParameters.DESCRIPTOR.fields_by_name
    unknown = sorted(name for name in params if name not in fields or name == "prompt")
    if unknown:
        raise TypeError(f"unknown parameter(s) for ImageParameters: {', '.join(unknown)}")
    body = {name: _plain(value) for name, value in params.items() if value is not None}
    parameters = _parse(body, image_pb2.ImageParameters(prompt=prompt), "parameters")
    request = message_class(model=model, parameters=parameters)
    for data in images:
        request.images.add(data=data)  # type: ignore[attr-defined]
    if mask is not None:
        request.mask.data = mask  # type: ignore[attr-defined]
    return request


def _with_params(message_class: type[Request], model: str, params: Mapping[str, Any]) -> Request:
    fields = message_class.DESCRIPTOR.fields_by_name
    unknown = sorted(name for name in params if name not in fields or name in _NOT_PARAMS)
    if unknown:
        raise TypeError(f"unknown parameter(s) for {message_class.DESCRIPTOR.name}: {', '.join(unknown)}")
    body = {name: _plain(value) for name, value in params.items() if value is not None}
    polymorphic.normalise(body, message_class.DESCRIPTOR)
    request = message_class(model=model)
    _parse(body, request, "parameters")
    return request


def _chat_message(message: ChatMessageLike, index: int) -> chat_pb2.ChatMessage:
    if isinstance(message, chat_pb2.ChatMessage):
        return message
    if not isinstance(message, Mapping):
        raise TypeError(f"messages[{index}]: expected a dict or a ChatMessage, got {type(message).__name__}")
    body = {key: _plain(value) for key, value in message.items() if value is not None}
    polymorphic.normalise(body, chat_pb2.ChatMessage.DESCRIPTOR, f"messages[{index}]")
    return _parse(body, chat_pb2.ChatMessage(), f"messages[{index}]")


def input_items(items: Iterable[InputItemLike], field: str = "items") -> list[objects_pb2.InputItem]:
    """Responses input items (dicts in OpenAI's shape, or InputItem) as InputItem messages."""
    converted = []
    for index, item in enumerate(items):
        where = f"{field}[{index}]"
        if isinstance(item, objects_pb2.InputItem):
            converted.append(item)
            continue
        if not isinstance(item, Mapping):
            raise TypeError(f"{where}: expected a dict or an InputItem, got {type(item).__name__}")
        body = {key: _plain(value) for key, value in item.items() if value is not None}
        polymorphic.normalise(body, objects_pb2.InputItem.DESCRIPTOR, where)
        converted.append(_parse(body, objects_pb2.InputItem(), where))
    return converted


def _plain(value: Any) -> Any:
    """Proto messages given as values (a ChatTool, a ResponseFormat...) in the JSON form ParseDict reads."""
    if isinstance(value, Message):
        return json_format.MessageToDict(value, preserving_proto_field_name=True)
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _parse(body: dict[str, Any], message: Request, where: str) -> Request:
    try:
        return json_format.ParseDict(body, message)
    except json_format.ParseError as error:
        raise ValueError(f"{where}: {error}") from None
