"""The gRPC service as the bridge's handlers see it: one stub per service, all on one channel.

Unary replies are parsed by the bridge, not by grpc.aio: grpc.aio parses a reply on the event loop, one C call
holding the GIL for its whole length (80 ms for a tokenize reply of a million tokens and their strings); here a
large reply is parsed in the parser thread (off_loop), a small one inline as before.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, cast

import grpc
from grpc_health.v1 import health_pb2_grpc

from ovserve.clients.v1 import (
    audio_pb2_grpc,
    batch_pb2_grpc,
    chat_pb2_grpc,
    completion_pb2_grpc,
    conversation_pb2_grpc,
    embedding_pb2_grpc,
    file_pb2_grpc,
    image_pb2_grpc,
    model_pb2_grpc,
    rerank_pb2_grpc,
    response_pb2_grpc,
    speech_pb2_grpc,
    tokenizer_pb2_grpc,
)
from ovserve.rest_bridge.off_loop import off_the_loop_if_large


class _ParsedCall:
    """A unary call whose reply comes as bytes, awaited as the parsed message; anything else is the call's."""

    def __init__(self, call: Any, parse: Callable[[bytes], Any]) -> None:
        self._call, self._parse = call, parse

    def __await__(self) -> Generator[Any, None, Any]:
        return self._parsed().__await__()

    async def _parsed(self) -> Any:
        raw: bytes = await self._call
        return await off_the_loop_if_large(len(raw), lambda: self._parse(raw))

    def __getattr__(self, name: str) -> Any:  # cancel(), done(), code(), initial_metadata()...
        return getattr(self._call, name)


class _RepliesParsedHere:
    """The channel as the generated stubs see it: unary-unary methods return their replies unparsed to _ParsedCall."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self._channel = channel

    def unary_unary(
        self, method: str, request_serializer: Any = None, response_deserializer: Any = None, **options: Any
    ) -> Callable[..., _ParsedCall]:
        raw = self._channel.unary_unary(method, request_serializer=request_serializer, **options)
        return lambda *args, **kwargs: _ParsedCall(raw(*args, **kwargs), response_deserializer)

    def __getattr__(self, name: str) -> Any:  # the streaming methods, unchanged
        return getattr(self._channel, name)


@dataclass(frozen=True)
class Backend:
    """The gRPC stubs the handlers call, all on one channel."""

    chat: chat_pb2_grpc.ChatServiceStub
    completions: completion_pb2_grpc.CompletionServiceStub
    models: model_pb2_grpc.ModelServiceStub
    health: health_pb2_grpc.HealthStub
    responses: response_pb2_grpc.ResponseServiceStub
    tokenizer: tokenizer_pb2_grpc.TokenizerServiceStub
    conversations: conversation_pb2_grpc.ConversationServiceStub
    embeddings: embedding_pb2_grpc.EmbeddingServiceStub
    rerank: rerank_pb2_grpc.RerankServiceStub
    audio: audio_pb2_grpc.AudioServiceStub
    files: file_pb2_grpc.FileServiceStub
    batches: batch_pb2_grpc.BatchServiceStub
    images: image_pb2_grpc.ImageServiceStub
    speech: speech_pb2_grpc.SpeechServiceStub

    @classmethod
    def on(cls, channel: grpc.aio.Channel) -> Backend:
        """Stubs on ``channel``."""
        channel = cast(grpc.aio.Channel, _RepliesParsedHere(channel))
        return cls(
            chat_pb2_grpc.ChatServiceStub(channel),
            completion_pb2_grpc.CompletionServiceStub(channel),
            model_pb2_grpc.ModelServiceStub(channel),
            health_pb2_grpc.HealthStub(channel),
            response_pb2_grpc.ResponseServiceStub(channel),
            tokenizer_pb2_grpc.TokenizerServiceStub(channel),
            conversation_pb2_grpc.ConversationServiceStub(channel),
            embedding_pb2_grpc.EmbeddingServiceStub(channel),
            rerank_pb2_grpc.RerankServiceStub(channel),
            audio_pb2_grpc.AudioServiceStub(channel),
            file_pb2_grpc.FileServiceStub(channel),
            batch_pb2_grpc.BatchServiceStub(channel),
            image_pb2_grpc.ImageServiceStub(channel),
            speech_pb2_grpc.SpeechServiceStub(channel),
        )
