"""The gRPC services of the ovserve.v1 contract, declared once.

The server registers each of them, lists them in reflection and reports their
health (``ovserve.service.server.services``); the typed clients make a stub of each
(``ovserve.clients._calls``). Adding a service is one line here, plus its servicer on
the server. Everything else about a service is read from its generated code
(``ovserve.clients.v1``), named the way the gRPC code generator names it.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from types import ModuleType
from typing import Any

import grpc

from ovserve.clients.v1 import (
    audio_pb2,
    audio_pb2_grpc,
    batch_pb2,
    batch_pb2_grpc,
    chat_pb2,
    chat_pb2_grpc,
    completion_pb2,
    completion_pb2_grpc,
    conversation_pb2,
    conversation_pb2_grpc,
    embedding_pb2,
    embedding_pb2_grpc,
    file_pb2,
    file_pb2_grpc,
    image_pb2,
    image_pb2_grpc,
    model_pb2,
    model_pb2_grpc,
    rerank_pb2,
    rerank_pb2_grpc,
    response_pb2,
    response_pb2_grpc,
    speech_pb2,
    speech_pb2_grpc,
    tokenizer_pb2,
    tokenizer_pb2_grpc,
)

__all__ = ["Service"]


class Service(Enum):
    """A service of the contract: (the ``*_pb2`` module declaring it, its ``*_pb2_grpc`` module)."""

    COMPLETION = (completion_pb2, completion_pb2_grpc)
    CHAT = (chat_pb2, chat_pb2_grpc)
    RESPONSE = (response_pb2, response_pb2_grpc)
    CONVERSATION = (conversation_pb2, conversation_pb2_grpc)
    FILE = (file_pb2, file_pb2_grpc)
    BATCH = (batch_pb2, batch_pb2_grpc)
    MODEL = (model_pb2, model_pb2_grpc)
    TOKENIZER = (tokenizer_pb2, tokenizer_pb2_grpc)
    EMBEDDING = (embedding_pb2, embedding_pb2_grpc)
    AUDIO = (audio_pb2, audio_pb2_grpc)
    RERANK = (rerank_pb2, rerank_pb2_grpc)
    IMAGE = (image_pb2, image_pb2_grpc)
    SPEECH = (speech_pb2, speech_pb2_grpc)

    def __init__(self, module: ModuleType, grpc_module: ModuleType) -> None:
        (descriptor,) = module.DESCRIPTOR.services_by_name.values()  # each proto file declares one service
        short = descriptor.name
        #: The ``*_pb2`` module: the service's descriptor and its messages.
        self.module = module
        #: ``ovserve.v1.ChatService``: what reflection lists, health reports and a call's path begins with.
        self.full_name: str = descriptor.full_name
        #: The generated client class; ``stub(channel)`` calls the service on a sync or grpc.aio channel.
        self.stub: Callable[[grpc.Channel | grpc.aio.Channel], Any] = getattr(grpc_module, f"{short}Stub")
        #: ``add_ChatServiceServicer_to_server(servicer, server)``: registers a servicer of every RPC.
        self.add_to_server: Callable[[Any, grpc.aio.Server], None] = getattr(
            grpc_module, f"add_{short}Servicer_to_server"
        )
