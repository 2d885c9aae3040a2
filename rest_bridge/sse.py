"""Server-sent events framing: `data:` lines then `[DONE]` (completions, chat); `event:` + `data:` (Responses)."""

from __future__ import annotations

import json
from typing import Any

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
