"""Server-sent events framing: `data:` lines then `[DONE]` (completions, chat); `event:` + `data:` (Responses).

A ``Framing`` turns a gRPC stream's messages into events (``BridgeHandler.relay`` writes them); the Responses
API's own is ``routes.responses.ResponseEventFraming``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Protocol

from ovserve.rest_bridge.errors import BridgeError

# Headers of an event stream. X-Accel-Buffering: nginx would otherwise buffer the stream.
HEADERS = {
    "Content-Type": "text/event-stream; charset=utf-8",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
}
DONE = b"data: [DONE]\n\n"

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def event(payload: dict[str, Any]) -> bytes:
    """One ``data: <json>`` event; the JSON is one line, so one ``data:`` field carries it."""
    return b"data: " + _encode(payload).encode() + b"\n\n"


def named_event(name: str, payload: dict[str, Any]) -> bytes:
    """One ``event: <name>`` / ``data: <json>`` event (the Responses API's framing; no ``[DONE]`` after the last)."""
    return b"event: " + name.encode() + b"\ndata: " + _encode(payload).encode() + b"\n\n"


class Framing(Protocol):
    """How one API writes its event stream: each message, a failure after the stream began, the end."""

    def event(self, message: Any) -> bytes | None:
        """The SSE bytes of one gRPC message (None: nothing to send)."""

    def failure(self, error: BridgeError) -> bytes:
        """The SSE bytes that report a failure after the stream began."""

    def end(self) -> bytes:
        """The SSE bytes that end the stream."""


class DataFraming:
    """``data: <json>`` per message, an error as a data line, then ``data: [DONE]`` (OpenAI's framing of the
    completions, chat and transcription streams)."""

    def __init__(self, to_json: Callable[[Any], dict[str, Any]]) -> None:
        self._to_json = to_json

    def event(self, message: Any) -> bytes | None:
        return event(self._to_json(message))

    def failure(self, error: BridgeError) -> bytes:
        return event(error.envelope())

    def end(self) -> bytes:
        return DONE


class ChunkFraming(DataFraming):
    """Completions and chat: as ``DataFraming``, with one chunk event per choice."""

    def event(self, message: Any) -> bytes:
        payload = self._to_json(message)
        choices = payload["choices"]
        if len(choices) <= 1:
            return event(payload)
        # OpenAI sends one choice per chunk, and clients that read choices[0] would lose the others;
        # the service coalesces the choices of one engine hand-over into one message.
        last = len(choices) - 1
        return b"".join(
            event({**payload, "choices": [choice], **({"usage": None} if "usage" in payload and i < last else {})})
            for i, choice in enumerate(choices)
        )
