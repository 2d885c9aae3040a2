"""Handlers of the Responses API routes: /v3/responses and /v3/responses/{id}[/cancel|/input_items].

Thin like ``handlers``: ``responses_requests`` builds the ResponseService
requests, ``responses_output`` writes OpenAI JSON and events. What lives here
is the event stream: ``event: <type>`` / ``data: <json>`` per gRPC event,
no ``[DONE]`` (OpenAI sends none), and a stream that always ends with a
closing event: if the gRPC stream fails after the headers went out, the
bridge writes ``response.failed`` (from the last Response snapshot it
relayed) and an ``error`` event, continuing the sequence numbers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import grpc
from tornado.iostream import StreamClosedError

from clients.v1 import response_pb2
from rest_bridge import responses_output, responses_requests, sse
from rest_bridge.errors import BridgeError, from_rpc_error
from rest_bridge.handlers import BridgeHandler, JsonBodyHandler

log = logging.getLogger(__name__)
LIFECYCLE_CLOSERS = {"response.completed", "response.incomplete", "response.failed"}


class ResponseEventsHandler(BridgeHandler):
    """A handler that relays a ResponseService event stream as the Responses API's SSE."""

    async def relay_events(self, call: Any) -> None:
        """Stream ``call``'s events; headers wait for the first, so an earlier error is a JSON error response."""
        self.call = call
        started = closed = False
        last_sequence = -1
        snapshot: dict[str, Any] | None = None  # the latest Response a lifecycle event carried
        try:
            async for message in call:
                try:
                    name, payload = responses_output.stream_event(message.event)
                except ValueError as error:  # an event without its oneof set: nothing to tell the client
                    log.warning("stream %s: %s", self.request_id, error)
                    continue
                if not started:
                    self._start_events()
                    started = True
                self.write(sse.named_event(name, payload))
                await self.flush()  # per event; raises if the client left
                last_sequence = payload["sequence_number"]
                if "response" in payload:
                    snapshot = payload["response"]
                closed = closed or name in LIFECYCLE_CLOSERS or name == "error"
        except grpc.aio.AioRpcError as error:
            if self.client_gone:
                return
            failure = from_rpc_error(error)
            if not started:
                raise failure from None
            log.warning("response stream %s failed after it began: %s", self.request_id, failure)
            self._write_failure(failure, snapshot, last_sequence, closed)
            closed = True
        except StreamClosedError:  # the client left between two events
            self.client_gone = True
            return
        except asyncio.CancelledError:
            if self.client_gone:  # on_connection_close cancelled the call
                return
            raise  # the handler itself was cancelled (shutdown)
        finally:
            call.cancel()  # no-op once the call is done; otherwise the engine lets go of the request now
        if not started:
            self._start_events()
        if not closed:  # the service ended the stream without a closing event: never leave the client waiting
            failure = BridgeError(500, "the response stream ended before its final event", type="server_error")
            self._write_failure(failure, snapshot, last_sequence, False)
        with contextlib.suppress(StreamClosedError):  # the client left right after the last event
            await self.finish()

    def _write_failure(
        self, failure: BridgeError, snapshot: dict[str, Any] | None, last_sequence: int, closed: bool
    ) -> None:
        """``response.failed`` (unless the response already ended) and ``error``, numbered after the last event."""
        sequence = last_sequence + 1
        if snapshot is not None and not closed:
            code = "rate_limit_exceeded" if failure.status_code == 429 else "server_error"
            failed = {**snapshot, "status": "failed", "error": {"code": code, "message": failure.message}}
            name = "response.failed"
            self.write(sse.named_event(name, {"type": name, "sequence_number": sequence, "response": failed}))
            sequence += 1
        error = responses_output.error_event(sequence, failure.message, failure.code or failure.type, failure.param)
        self.write(sse.named_event("error", error))


class ResponsesHandler(JsonBodyHandler, ResponseEventsHandler):
    """POST /v3/responses: CreateResponse, or StreamResponse as SSE with ``"stream": true``."""

    async def post(self) -> None:
        request, stream = responses_requests.create_request(self.json_body())
        if stream:
            await self.relay_events(self.backend.responses.StreamResponse(request, **self.grpc_options()))
        else:
            reply = await self.unary(self.backend.responses.CreateResponse, request)
            self.write_json(responses_output.response(reply.response))


class ResponseHandler(ResponseEventsHandler):
    """GET /v3/responses/{id} (with ``?stream=true``: the resumed event stream); DELETE /v3/responses/{id}."""

    async def get(self, response_id: str) -> None:
        request = responses_requests.get_request(response_id, self.request.query_arguments)
        if isinstance(request, response_pb2.ResumeResponseStreamRequest):
            await self.relay_events(self.backend.responses.ResumeResponseStream(request, **self.grpc_options()))
        else:
            reply = await self.unary(self.backend.responses.GetResponse, request)
            self.write_json(responses_output.response(reply.response))

    async def delete(self, response_id: str) -> None:
        request = response_pb2.DeleteResponseRequest(response_id=response_id)
        reply = await self.unary(self.backend.responses.DeleteResponse, request)
        self.write_json(responses_output.deleted(reply))


class CancelResponseHandler(BridgeHandler):
    """POST /v3/responses/{id}/cancel (a body, if any, is ignored, as OpenAI does)."""

    async def post(self, response_id: str) -> None:
        request = response_pb2.CancelResponseRequest(response_id=response_id)
        reply = await self.unary(self.backend.responses.CancelResponse, request)
        self.write_json(responses_output.response(reply.response))


class InputItemsHandler(BridgeHandler):
    """GET /v3/responses/{id}/input_items?after=&limit=&order=&include=."""

    async def get(self, response_id: str) -> None:
        request = responses_requests.input_items_request(response_id, self.request.query_arguments)
        reply = await self.unary(self.backend.responses.ListResponseInputItems, request)
        self.write_json(responses_output.input_item_list(reply))


# Routes under each of app.PREFIXES; response ids ("resp_...") have no "/".
ROUTES = [
    ("/responses", ResponsesHandler),
    ("/responses/([^/]+)", ResponseHandler),
    ("/responses/([^/]+)/cancel", CancelResponseHandler),
    ("/responses/([^/]+)/input_items", InputItemsHandler),
]
