"""The tornado application: OpenAI's routes on /v3, with /v1 aliases, over one gRPC channel."""

from __future__ import annotations

from typing import Any

import grpc
import tornado.web

from rest_bridge.audio import ROUTES as AUDIO_ROUTES
from rest_bridge.config import BridgeSettings
from rest_bridge.conversations import ROUTES as CONVERSATIONS_ROUTES
from rest_bridge.handlers import (
    Backend,
    CompletionsHandler,
    HealthHandler,
    LoadsHandler,
    MetricsHandler,
    ModelHandler,
    ModelsHandler,
    NotFoundHandler,
    ServerFigures,
)
from rest_bridge.responses_api import ROUTES as RESPONSES_ROUTES
from rest_bridge.responses_websocket import routes as websocket_routes
from rest_bridge.retrieval import ROUTES as RETRIEVAL_ROUTES
from rest_bridge.stored_chat import ROUTES as STORED_CHAT_ROUTES
from rest_bridge.tokenizer import ROUTES as TOKENIZER_ROUTES

# /v3 is OVMS's prefix; /v1 is OpenAI's, so clients configured for OpenAI's default path work too.
PREFIXES = ("/v3", "/v1")
ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [
    *STORED_CHAT_ROUTES,  # POST /chat/completions (create) with the stored-completion routes
    ("/completions", CompletionsHandler),
    ("/models", ModelsHandler),
    ("/models/(.+)", ModelHandler),  # model ids may contain "/"
    *RESPONSES_ROUTES,
    *CONVERSATIONS_ROUTES,
    *TOKENIZER_ROUTES,
    *RETRIEVAL_ROUTES,
    *AUDIO_ROUTES,
]


def make_app(
    channel: grpc.aio.Channel, settings: BridgeSettings | None = None, figures: ServerFigures | None = None
) -> tornado.web.Application:
    """The bridge application calling the ovserve gRPC service on ``channel``; ``figures``: the server's
    metrics and load, when the bridge runs beside it (a bridge alone has no /metrics or /v1/loads)."""
    arguments: dict[str, Any] = {"backend": Backend.on(channel), "settings": settings or BridgeSettings()}
    rules: list[Any] = websocket_routes(PREFIXES, arguments)  # before the HTTP rules of the same paths
    rules += [(prefix + path, handler, arguments) for prefix in PREFIXES for path, handler in ROUTES]
    rules.append(("/health", HealthHandler, arguments))
    if figures is not None:
        rules.append(("/metrics", MetricsHandler, {"figures": figures}))
        rules += [(prefix + "/loads", LoadsHandler, {"figures": figures}) for prefix in PREFIXES]
    return tornado.web.Application(
        rules,
        default_handler_class=NotFoundHandler,
        default_handler_args=arguments,
        compress_response=False,  # per-event flushes of an SSE stream do not mix with gzip
        websocket_max_message_size=(settings or BridgeSettings()).max_body_bytes,
    )
