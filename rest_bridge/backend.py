"""The gRPC service as the bridge's handlers see it: one stub per service, all on one channel."""

from __future__ import annotations

from dataclasses import dataclass

import grpc
from grpc_health.v1 import health_pb2_grpc

from clients.v1 import (
    audio_pb2_grpc,
    batch_pb2_grpc,
    chat_pb2_grpc,
    completion_pb2_grpc,
    conversation_pb2_grpc,
    embedding_pb2_grpc,
    file_pb2_grpc,
    model_pb2_grpc,
    rerank_pb2_grpc,
    response_pb2_grpc,
    tokenizer_pb2_grpc,
)


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

    @classmethod
    def on(cls, channel: grpc.aio.Channel) -> Backend:
        """Stubs on ``channel``."""
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
        )
