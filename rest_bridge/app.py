"""The tornado application: OpenAI's routes (and Anthropic's /messages) on /v3, with /v1 aliases, over one gRPC
channel."""

from __future__ import annotations

from typing import Any

import grpc
import tornado.web

from ovserve.clients.defaults import MIB
from ovserve.rest_bridge.backend import Backend
from ovserve.rest_bridge.config import BridgeSettings
from ovserve.rest_bridge.handler import NotFoundHandler
from ovserve.rest_bridge.routes import (
    audio,
    batches,
    chat_completions,
    completions,
    config,
    conversations,
    embeddings,
    files,
    health,
    images,
    messages,
    models,
    rerank,
    responses,
    responses_websocket,
    speech,
    tokenize,
)
from ovserve.rest_bridge.routes.health import ServerFigures

WEBSOCKET_SLACK_BYTES = MIB
# /v3 is OVMS's prefix; /v1 is OpenAI's, so clients configured for OpenAI's default path work too.
PREFIXES = ("/v3", "/v1")
ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [
    *chat_completions.ROUTES,
    *completions.ROUTES,
    *models.ROUTES,
    *responses.ROUTES,
    *conversations.ROUTES,
    *tokenize.ROUTES,
    *embeddings.ROUTES,
    *rerank.ROUTES,
    *audio.ROUTES,
    *images.ROUTES,
    *speech.ROUTES,
    *files.ROUTES,
    *batches.ROUTES,
    *messages.ROUTES,  # Anthropic's Messages API
]


def make_app(
    channel: grpc.aio.Channel, settings: BridgeSettings | None = None, figures: ServerFigures | None = None
) -> tornado.web.Application:
    """The bridge application calling the ovserve gRPC service on ``channel``; ``figures``: the server's
    metrics and load, when the bridge runs beside it (a bridge alone has no /metrics or /v1/loads)."""
    arguments: dict[str, Any] = {"backend": Backend.on(channel), "settings": settings or BridgeSettings()}
    rules: list[Any] = responses_websocket.routes(PREFIXES, arguments)  # before the HTTP rules of the same paths
    rules += [(path, handler, arguments) for path, handler in config.RULES]  # /v1's in OVMS's shape
    rules += [(prefix + path, handler, arguments) for prefix in PREFIXES for path, handler in ROUTES]
    rules += [(path, handler, arguments) for path, handler in models.ROUTER_ROUTES]  # llama.cpp's, at the root
    rules += health.rules(PREFIXES, arguments, figures)
    return tornado.web.Application(
        rules,
        default_handler_class=NotFoundHandler,
        default_handler_args=arguments,
        compress_response=False,  # per-event flushes of an SSE stream do not mix with gzip
        # Past the body limit by a margin, so that a message just over it is answered with a 413 error event
        # (routes/responses_websocket.py); far larger ones are closed by tornado with 1009 (message too big).
        websocket_max_message_size=(settings or BridgeSettings()).max_body_bytes + WEBSOCKET_SLACK_BYTES,
    )
