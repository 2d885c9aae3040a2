"""The Responses API's WebSocket mode: ``GET /v3/responses`` upgraded; one ``response.create`` message per response.

A client keeps one connection and sends ``{"type": "response.create", ...}``
with a Responses body; each of the response's events comes back as one JSON
text message, the same events (and numbering) as the SSE stream. ``stream``
(true or false) is accepted and ignored, since every response streams here and
OpenAI's Agents SDK always sends it. Messages are handled in order: the next
one is read when the current response has ended. Any failure, the bridge's own
included, is a WebSocket error event,
``{"type": "error", "status": 400, "error": {"type", "code", "message", "param"}}``,
and the connection stays open for the next message.

A ``store: false`` response can be continued on the connection that made it:
the connection keeps each finished response's conversation (its input items
and its output items, the last ``KEPT_RESPONSES`` responses), and a
continuation with ``previous_response_id`` goes to the service as that
conversation followed by the new input, with ``previous_response_id`` echoed
back as sent. A continuation that fails forgets the response it continued
(OpenAI evicts it), and a new connection starts empty: continuing a ``store:
false`` response there is ``previous_response_not_found``. Stored responses
are continued by the service, from the store, as over HTTP.
"""

from __future__ import annotations

import contextlib
import json
import logging
import uuid
from collections import OrderedDict
from typing import Any

import grpc
import tornado.routing
import tornado.websocket

from ovserve.clients.polymorphic import json_type
from ovserve.rest_bridge import cors
from ovserve.rest_bridge.backend import Backend
from ovserve.rest_bridge.config import BridgeSettings
from ovserve.rest_bridge.errors import BridgeError, from_rpc_error
from ovserve.rest_bridge.off_loop import off_the_loop_if_large
from ovserve.rest_bridge.render import responses as render
from ovserve.rest_bridge.translate import responses as translate
from ovserve.rest_bridge.translate.body import bad_request, parse_json_body

log = logging.getLogger(__name__)

KEPT_RESPONSES = 8  # store: false responses a connection can continue (OpenAI keeps the latest)
TERMINAL = {"response.completed", "response.incomplete", "response.failed"}
CREATE = "response.create"


class WebSocketUpgrade(tornado.routing.PathMatches):
    """``path`` requested with ``Upgrade: websocket``; plain HTTP on the same path goes to the next rule."""

    def match(self, request: Any) -> dict[str, Any] | None:
        if request.headers.get("Upgrade", "").lower() != "websocket":
            return None
        return super().match(request)


class ResponsesSocket(tornado.websocket.WebSocketHandler):
    """One WebSocket-mode connection: response.create messages in, response events out."""

    def initialize(self, backend: Backend, settings: BridgeSettings) -> None:  # type: ignore[override]
        self.backend = backend
        self.settings_ = settings
        # response id -> the conversation it ended (input items, then its output as input items)
        self._conversations: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()

    def check_origin(self, origin: str) -> bool:
        """Same-origin pages, and the origins CORS lets in (``--cors-origin``)."""
        return super().check_origin(origin) or cors.allowed_origin(self.settings_.cors_origins, origin) is not None

    async def on_message(self, message: str | bytes) -> None:
        """One response.create: run it to its end (tornado reads the next message only after this returns).

        An exception escaping here would make tornado log it and close the
        socket with no event, so a failure of the bridge's own is answered as
        a 500 error event and the connection goes on.
        """
        try:
            await self._respond(message)
        except Exception:
            log.exception("WebSocket message failed")  # a bug of the bridge's: the operator needs where
            self._send_error(BridgeError(500, "the server failed to handle the message", type="server_error"))

    async def _respond(self, message: str | bytes) -> None:
        """Translate one message and relay its response's events; a refused message is an error event."""
        request_id = uuid.uuid4().hex
        raw = message.encode() if isinstance(message, str) else message
        try:  # a large message is parsed and translated in a worker thread, as an HTTP body is
            continued, sent, conversation, request = await off_the_loop_if_large(len(raw), lambda: self._translate(raw))
        except BridgeError as error:
            continued = _continued(raw)
            self._forget(continued)
            self._send_error(error)
            return
        metadata = [("x-request-id", request_id)]
        if authorization := self.request.headers.get("Authorization"):
            metadata.append(("authorization", authorization))
        call = self.backend.responses.StreamResponse(
            request, timeout=self.settings_.deadline_seconds, metadata=tuple(metadata)
        )
        final: dict[str, Any] | None = None
        try:
            async for reply in call:
                name, payload = render.stream_event(reply.event)
                if conversation is not None and "response" in payload:
                    payload["response"]["previous_response_id"] = continued  # the id as the client sent it
                if self.ws_connection is None:  # the client left: stop generating
                    call.cancel()
                    return
                await self.write_message(json.dumps(payload))
                if name in TERMINAL:
                    final = payload["response"]
        except grpc.aio.AioRpcError as error:
            self._forget(continued)
            self._send_error(from_rpc_error(error))
            return
        except tornado.websocket.WebSocketClosedError:
            call.cancel()
            return
        if final is None or final["status"] == "failed":
            self._forget(continued)
            return
        self._remember(final, conversation if conversation is not None else _input_items(sent))

    def _translate(self, raw: bytes) -> tuple[Any, dict[str, Any], list[dict[str, Any]] | None, Any]:
        """The message's previous_response_id, the body to send, the kept conversation it continues (or None)
        and the StreamResponse request; parsed and checked like an HTTP body."""
        if len(raw) > self.settings_.max_body_bytes:
            limit = self.settings_.max_body_bytes
            raise BridgeError(413, f"the message is larger than {limit} bytes", code="request_too_large")
        body = parse_json_body(raw, "application/json", self.settings_.max_json_depth)
        kind = body.pop("type", None)
        if kind != CREATE:
            raise bad_request("type", f'type: expected "{CREATE}", got {json.dumps(kind)}')
        stream = body.pop("stream", None)  # every response streams; the Agents SDK sends stream: true anyway
        if stream is not None and not isinstance(stream, bool):
            raise bad_request("stream", f"stream: expected a boolean, got {json_type(stream)}")
        if "background" in body:
            raise bad_request("background", "background: not a field of WebSocket mode (every response streams)")
        sent, conversation = self._continuation(body)
        request, _ = translate.create_request({**sent, "stream": True})
        return body.get("previous_response_id"), sent, conversation, request

    def _continuation(self, body: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
        """The body to send, and the conversation it continues when that is kept on this connection."""
        previous = body.get("previous_response_id")
        if not isinstance(previous, str) or previous not in self._conversations:
            return body, None  # a stored response (the service finds it) or none
        conversation = [*self._conversations[previous], *_input_items(body)]
        sent = {key: value for key, value in body.items() if key != "previous_response_id"}
        return {**sent, "input": conversation}, conversation

    def _remember(self, response: dict[str, Any], conversation: list[dict[str, Any]]) -> None:
        if response.get("store"):
            return  # the service keeps it
        self._conversations[response["id"]] = [*conversation, *_output_as_input(response.get("output", []))]
        while len(self._conversations) > KEPT_RESPONSES:
            self._conversations.popitem(last=False)

    def _forget(self, response_id: Any) -> None:
        if isinstance(response_id, str):
            self._conversations.pop(response_id, None)

    def _send_error(self, error: BridgeError) -> None:
        """The WebSocket error envelope (code: OpenAI's, else the error type; never null)."""
        payload = {
            "type": "error",
            "status": error.status_code,
            "error": {"type": error.type, "code": error.code or error.type, "message": error.message,
                      "param": error.param},
        }  # fmt: skip
        with contextlib.suppress(tornado.websocket.WebSocketClosedError):  # the client left: nobody to tell
            self.write_message(json.dumps(payload))


def _continued(raw: bytes) -> Any:
    """The previous_response_id a refused message named, if it can be read (a failed turn forgets it)."""
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: nested too deep, already refused as such
        return None
    return body.get("previous_response_id") if isinstance(body, dict) else None


def _input_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A body's input as a list of items (a string is one user message)."""
    given = body.get("input")
    if isinstance(given, str):
        return [{"type": "message", "role": "user", "content": given}]
    return list(given) if isinstance(given, list) else []


def _output_as_input(output: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A response's output items as the input items that replay them."""
    items: list[dict[str, Any]] = []
    for item in output:
        kind = item.get("type")
        if kind == "message":
            parts = [{"type": "output_text", "text": part.get("text", "")} for part in item.get("content", [])]
            items.append({"type": "message", "role": "assistant", "content": parts})
        elif kind == "function_call":
            items.append({key: item[key] for key in ("type", "call_id", "name", "arguments")})
        elif kind == "reasoning":
            summary = [{"type": "summary_text", "text": part.get("text", "")} for part in item.get("summary", [])]
            items.append({"type": "reasoning", "summary": summary})
    return items


def routes(prefixes: tuple[str, ...], arguments: dict[str, Any]) -> list[tuple[Any, Any, dict[str, Any]]]:
    """The WebSocket rules, before the HTTP ones on the same path."""
    return [(WebSocketUpgrade(f"{prefix}/responses"), ResponsesSocket, arguments) for prefix in prefixes]
