"""The Responses API: /responses and /responses/{id}[/cancel|/input_items], /responses/compact and /input_tokens.

``translate.responses`` builds the ResponseService requests, ``render.responses`` writes OpenAI JSON and
events. What lives here is the event stream: ``event: <type>`` / ``data: <json>`` per gRPC event, no ``[DONE]``
(OpenAI sends none), and a stream that always ends with a closing event: if the gRPC stream fails after the
headers went out, the bridge writes ``response.failed`` (from the last Response snapshot it relayed) and an
``error`` event, continuing the sequence numbers. The WebSocket mode on the same path is
``responses_websocket``.
"""

from __future__ import annotations

import logging
from typing import Any

from ovserve.clients.v1 import response_pb2
from ovserve.rest_bridge import sse
from ovserve.rest_bridge.errors import BridgeError
from ovserve.rest_bridge.handler import BridgeHandler, JsonBodyHandler
from ovserve.rest_bridge.render import responses as render
from ovserve.rest_bridge.translate import responses as translate

log = logging.getLogger(__name__)
LIFECYCLE_CLOSERS = {"response.completed", "response.incomplete", "response.failed"}


class ResponseEventFraming:
    """The Responses API's stream: ``event: <type>`` / ``data: <json>`` per event, no ``[DONE]``.

    It always ends with a closing event: after a failure, ``response.failed``
    (from the last Response snapshot relayed) and ``error``, numbered after the
    last event; a stream the service ended without its final event gets them too.
    """

    def __init__(self, request_id: str) -> None:
        self._request_id = request_id
        self._last_sequence = -1
        self._snapshot: dict[str, Any] | None = None  # the latest Response a lifecycle event carried
        self._closed = False

    def event(self, message: Any) -> bytes | None:
        try:
            name, payload = render.stream_event(message.event)
        except ValueError as error:  # an event without its oneof set: nothing to tell the client
            log.warning("stream %s: %s", self._request_id, error)
            return None
        self._last_sequence = payload["sequence_number"]
        self._snapshot = payload.get("response", self._snapshot)
        self._closed = self._closed or name in LIFECYCLE_CLOSERS or name == "error"
        return sse.named_event(name, payload)

    def failure(self, error: BridgeError) -> bytes:
        """``response.failed`` (unless the response already ended) and ``error``."""
        sequence, data = self._last_sequence + 1, b""
        if self._snapshot is not None and not self._closed:
            code = "rate_limit_exceeded" if error.status_code == 429 else "server_error"
            failed = {**self._snapshot, "status": "failed", "error": {"code": code, "message": error.message}}
            name = "response.failed"
            data += sse.named_event(name, {"type": name, "sequence_number": sequence, "response": failed})
            sequence += 1
        self._closed = True
        payload = render.error_event(sequence, error.message, error.code or error.type, error.param)
        return data + sse.named_event("error", payload)

    def end(self) -> bytes:
        if self._closed:
            return b""
        # The service ended the stream without a closing event: never leave the client waiting.
        return self.failure(BridgeError(500, "the response stream ended before its final event", type="server_error"))


def _response(reply: Any) -> dict[str, Any]:
    """The Response object of a reply that carries one (create, get, cancel)."""
    return render.response(reply.response)


class ResponseEventsHandler(BridgeHandler):
    """A handler that relays a ResponseService event stream as the Responses API's SSE."""

    async def relay_events(self, call: Any) -> None:
        """Stream ``call``'s events (see ResponseEventFraming)."""
        await self.relay(call, ResponseEventFraming(self.request_id))


class ResponsesHandler(JsonBodyHandler, ResponseEventsHandler):
    """POST /v3/responses: CreateResponse, or StreamResponse as SSE with ``"stream": true``."""

    async def post(self) -> None:
        request, stream = await self.translated(translate.create_request)
        if stream:
            await self.relay_events(self.backend.responses.StreamResponse(request, **self.grpc_options()))
        else:
            await self.answer(self.backend.responses.CreateResponse, request, _response)


class CompactHandler(JsonBodyHandler):
    """POST /v3/responses/compact: CompactResponse."""

    async def post(self) -> None:
        request = await self.translated(translate.compact_request)
        await self.answer(self.backend.responses.CompactResponse, request, render.compacted)


class InputTokensHandler(JsonBodyHandler):
    """POST /v3/responses/input_tokens: CountResponseInputTokens."""

    async def post(self) -> None:
        request = await self.translated(translate.input_tokens_request)
        await self.answer(self.backend.responses.CountResponseInputTokens, request, render.input_tokens)


class ResponseHandler(ResponseEventsHandler):
    """GET /v3/responses/{id} (with ``?stream=true``: the resumed event stream); DELETE /v3/responses/{id}."""

    async def get(self, response_id: str) -> None:
        request = translate.get_request(response_id, self.request.query_arguments)
        if isinstance(request, response_pb2.ResumeResponseStreamRequest):
            await self.relay_events(self.backend.responses.ResumeResponseStream(request, **self.grpc_options()))
        else:
            await self.answer(self.backend.responses.GetResponse, request, _response)

    async def delete(self, response_id: str) -> None:
        request = response_pb2.DeleteResponseRequest(response_id=response_id)
        await self.answer(self.backend.responses.DeleteResponse, request, render.deleted)


class CancelResponseHandler(BridgeHandler):
    """POST /v3/responses/{id}/cancel (a body, if any, is ignored, as OpenAI does)."""

    async def post(self, response_id: str) -> None:
        request = response_pb2.CancelResponseRequest(response_id=response_id)
        await self.answer(self.backend.responses.CancelResponse, request, _response)


class InputItemsHandler(BridgeHandler):
    """GET /v3/responses/{id}/input_items?after=&limit=&order=&include=."""

    async def get(self, response_id: str) -> None:
        request = translate.input_items_request(response_id, self.request.query_arguments)
        await self.answer(self.backend.responses.ListResponseInputItems, request, render.input_item_list)


# Response ids ("resp_...") have no "/".
ROUTES = [
    ("/responses", ResponsesHandler),
    ("/responses/compact", CompactHandler),  # before the id routes: ids always start "resp_"
    ("/responses/input_tokens", InputTokensHandler),
    ("/responses/([^/]+)", ResponseHandler),
    ("/responses/([^/]+)/cancel", CancelResponseHandler),
    ("/responses/([^/]+)/input_items", InputItemsHandler),
]
