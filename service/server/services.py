"""The services this server implements: every service of the contract (``ovserve.clients.services``) and its servicer.

The server registers each servicer, lists each service in reflection and
reports each one's health, all from ``SERVED``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import grpc

from ovserve.clients.services import Service
from ovserve.service.api.files import FilesApi
from ovserve.service.api.lora import RuntimeLora
from ovserve.service.api.stored_chat import StoredChatCompletions
from ovserve.service.batches.api import BatchesApi
from ovserve.service.models import ModelRegistry
from ovserve.service.pipelines import PipelineKind
from ovserve.service.responses.api import ResponsesApi
from ovserve.service.responses.conversations import ConversationsApi
from ovserve.service.server.config_reload import ConfigReload
from ovserve.service.server.model_admin import ModelAdmin
from ovserve.service.server.servicers import (
    AudioServicer,
    BatchServicer,
    ChatServicer,
    CompletionServicer,
    ConversationServicer,
    EmbeddingServicer,
    FileServicer,
    ImageServicer,
    ModelServicer,
    RerankServicer,
    ResponseServicer,
    SpeechServicer,
    TokenizerServicer,
)


class ServerParts(Protocol):
    """What the servicers are built from: the server's (``ovserve.service.server.grpc_server.Server``)."""

    registry: ModelRegistry
    stored_chat: StoredChatCompletions
    responses: ResponsesApi
    conversations: ConversationsApi
    files: FilesApi
    batches: BatchesApi
    lora: RuntimeLora
    admin: ModelAdmin
    reloader: ConfigReload


# How the server builds each service's servicer from its parts.
SERVICERS: dict[Service, Callable[[ServerParts], Any]] = {
    Service.COMPLETION: lambda server: CompletionServicer(server.registry),
    Service.CHAT: lambda server: ChatServicer(server.registry, server.stored_chat),
    Service.RESPONSE: lambda server: ResponseServicer(server.responses),
    Service.CONVERSATION: lambda server: ConversationServicer(server.conversations),
    Service.FILE: lambda server: FileServicer(server.files),
    Service.BATCH: lambda server: BatchServicer(server.batches),
    Service.MODEL: lambda server: ModelServicer(server.registry, server.lora, server.admin, server.reloader),
    Service.TOKENIZER: lambda server: TokenizerServicer(server.registry),
    Service.EMBEDDING: lambda server: EmbeddingServicer(server.registry),
    Service.AUDIO: lambda server: AudioServicer(server.registry),
    Service.RERANK: lambda server: RerankServicer(server.registry),
    Service.IMAGE: lambda server: ImageServicer(server.registry),
    Service.SPEECH: lambda server: SpeechServicer(server.registry),
}

# The services served, by full name (health and reflection list them): how to register each, and how to build
# its servicer from the server. Every service of the contract: one without a servicer fails here, at import.
SERVED: dict[str, tuple[Callable[[Any, grpc.aio.Server], None], Callable[[ServerParts], Any]]] = {
    service.full_name: (service.add_to_server, SERVICERS[service]) for service in Service
}

# The kind of model each service answers with (None: it needs none: conversations, the model list). A service
# is NOT_SERVING while every model of its kind is down; with no model of its kind configured it follows the
# server (it answers such requests with NOT_FOUND or INVALID_ARGUMENT anyway).
ANSWERS_WITH: dict[Service, PipelineKind | None] = {
    Service.COMPLETION: PipelineKind.GENERATE,
    Service.CHAT: PipelineKind.GENERATE,
    Service.RESPONSE: PipelineKind.GENERATE,
    Service.TOKENIZER: PipelineKind.GENERATE,
    Service.EMBEDDING: PipelineKind.EMBED,
    Service.RERANK: PipelineKind.RERANK,
    Service.AUDIO: PipelineKind.TRANSCRIBE,
    Service.IMAGE: PipelineKind.IMAGE,
    Service.SPEECH: PipelineKind.SPEAK,
    Service.CONVERSATION: None,
    Service.MODEL: None,
}


def services_down(kinds: dict[str, PipelineKind], down: set[str]) -> list[str]:
    """The full names of the services that cannot answer now: every model of their kind is in ``down``."""
    served = set(kinds.values())
    up = {kind for name, kind in kinds.items() if name not in down}
    return [
        service.full_name
        for service, kind in ANSWERS_WITH.items()
        if kind is not None and kind in served and kind not in up
    ]
