"""The handlers every route builds on: read the body, call the gRPC stub, write OpenAI JSON or SSE.

Route handlers are thin: ``translate`` turns OpenAI JSON into proto requests, ``render`` turns proto replies
into OpenAI JSON, ``errors`` maps every failure to OpenAI's envelope. What lives here is HTTP: request ids,
metadata, deadlines, the body limit, the event stream, and cancelling the gRPC call the moment the client goes
away.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
import re
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import grpc
import tornado.web
from google.protobuf.message import Message
from opentelemetry import trace
from tornado.iostream import StreamClosedError

from clients.tracing import extracted, injected
from clients.v1 import model_pb2
from rest_bridge import cors, sse
from rest_bridge.backend import Backend
from rest_bridge.config import BridgeSettings
from rest_bridge.errors import BridgeError, from_rpc_error
from rest_bridge.json_body import encode_json
from rest_bridge.off_loop import INLINE_BODY_BYTES, off_the_loop_if_large
from rest_bridge.translate.body import parse_json_body

tracer = trace.get_tracer("ovserve.rest_bridge")

log = logging.getLogger(__name__)
T = TypeVar("T")
RETRIABLE = {429, 503}  # statuses answered with Retry-After
_REQUEST_ID = re.compile(r"[\x21-\x7e]{1,128}")  # what a gRPC metadata value and a log line can carry


class BridgeHandler(tornado.web.RequestHandler):
    """Base of every bridge handler: request ids, gRPC metadata, OpenAI error bodies, client-gone cancellation."""

    backend: Backend
    settings_: BridgeSettings

    def initialize(self, backend: Backend, settings: BridgeSettings) -> None:  # type: ignore[override]
        self.backend = backend
        self.settings_ = settings
        self.call: Any = None  # the gRPC call in flight, cancelled if the client leaves
        self.client_gone = False
        self.set_default_headers()  # again, now that the settings (CORS origins) are known
        # The request's span, under the client's traceparent if it sent one; the gRPC call carries it on.
        self.span = tracer.start_span(
            f"{self.request.method} {self.request.path}", context=extracted(self.request.headers),
            kind=trace.SpanKind.SERVER,
            attributes={"http.request.method": self.request.method or "", "url.path": self.request.path},
        )  # fmt: skip

    def decode_argument(self, value: bytes, name: str | None = None) -> str:
        """Path and query arguments as text, bytes that are not UTF-8 as U+FFFD: tornado's own decoding refused
        them with a 400 before the body was read and closed the connection under a client still sending it;
        the id then simply names nothing (404), a query value is checked as any other."""
        return value.decode("utf-8", errors="replace")

    @functools.cached_property
    def request_id(self) -> str:
        """The client's x-request-id if it is usable as gRPC metadata (printable ASCII), else a new one."""
        sent = self.request.headers.get("x-request-id", "")
        return sent if _REQUEST_ID.fullmatch(sent) else uuid.uuid4().hex

    def set_default_headers(self) -> None:
        # Also runs again when an error response clears the headers, so the id (and CORS) is on every response.
        self.set_header("x-request-id", self.request_id)
        if hasattr(self, "settings_"):  # tornado's constructor calls this before initialize()
            cors.add_headers(self, self.settings_.cors_origins)

    def options(self, *args: str) -> None:
        """A browser's CORS preflight (405 unless --cors-origin is given)."""
        cors.answer_preflight(self, self.settings_.cors_origins)

    def metadata(self) -> tuple[tuple[str, str], ...]:
        """gRPC metadata for the call: the request id, the client's Authorization if it sent one, and the
        request span's trace context."""
        sent: tuple[tuple[str, str], ...] = (("x-request-id", self.request_id),)
        if authorization := self.request.headers.get("Authorization"):
            sent = (*sent, ("authorization", authorization))
        return injected(sent, trace.set_span_in_context(self.span))

    def on_finish(self) -> None:
        """End the request's span with its HTTP status."""
        self.span.set_attribute("http.response.status_code", self.get_status())
        if self.get_status() >= 500:
            self.span.set_status(trace.StatusCode.ERROR)
        self.span.end()

    def grpc_options(self) -> dict[str, Any]:
        """Keyword arguments of every stub call: deadline and metadata."""
        return {"timeout": self.settings_.deadline_seconds, "metadata": self.metadata()}

    async def check_key(self) -> None:
        """Raise the service's 401 if it refuses the caller's key; the key itself is known only to the service.

        Called before answering a refusal of the bridge's own (bad body, too
        large), so a caller without a valid key learns nothing about the API
        from its refusals. One cheap authenticated call, and only on that path.
        """
        try:
            await self.backend.models.ListModels(
                model_pb2.ListModelsRequest(), timeout=self.settings_.health_timeout_seconds, metadata=self.metadata()
            )
        except grpc.aio.AioRpcError as error:
            if error.code() == grpc.StatusCode.UNAUTHENTICATED:
                raise from_rpc_error(error) from None
            # Any other failure says nothing about the key: the refusal stands.

    def on_connection_close(self) -> None:
        # The client left: stop generating for it now (the engine frees the request and its KV cache).
        self.client_gone = True
        if self.call is not None:
            self.call.cancel()

    def write_json(self, payload: dict[str, Any], status: int = 200) -> None:
        """Finish with a JSON body."""
        self.write_encoded(encode_json(payload), status)

    def write_encoded(self, body: bytes | str, status: int = 200) -> None:
        """Finish with a JSON body already encoded."""
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(body)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Every error as OpenAI's envelope, also tornado's own (405, malformed requests) and unexpected ones."""
        error = kwargs.get("exc_info", (None, None, None))[1]
        if not isinstance(error, BridgeError):
            if isinstance(error, tornado.web.HTTPError):
                message = error.log_message or self._reason
                error = BridgeError(status_code, message, type=_http_type(status_code))
                if status_code == 405:
                    error.message = f"method {self.request.method} is not allowed on {self.request.path}"
            else:  # a bug; tornado has logged it with the traceback
                error = BridgeError(500, "internal error in the REST bridge", type="server_error")
        if status_code in RETRIABLE:  # OpenAI's clients wait this long before they retry
            self.set_header("Retry-After", str(max(1, math.ceil(error.retry_after or 1))))
        self.set_header("Content-Type", "application/json")
        self.finish(encode_json(error.envelope()))

    async def unary(self, method: Any, request: Message) -> Any:
        """Call a unary RPC; a gRPC error becomes a BridgeError, a vanished client ends the handler quietly."""
        self.call = method(request, **self.grpc_options())
        try:
            return await self.call
        except grpc.aio.AioRpcError as error:
            raise from_rpc_error(error) from None
        except asyncio.CancelledError:
            if self.client_gone:  # nobody reads the answer; 499 is what the access log records
                raise BridgeError(499, "the client closed the connection", type="request_cancelled") from None
            raise

    async def answer(self, method: Any, request: Message, render: Callable[[Any], dict[str, Any]]) -> None:
        """Call a unary RPC and finish with its reply ``render``ed as OpenAI JSON (in PARSER when the reply is
        large: a tokenize reply of millions of tokens took seconds of the loop to render and encode)."""
        reply = await self.unary(method, request)
        size = reply.ByteSize()
        sliced = size > INLINE_BODY_BYTES  # then encoded in PARSER (off_the_loop_if_large), a slice at a time
        self.write_encoded(await off_the_loop_if_large(size, lambda: encode_json(render(reply), sliced=sliced)))

    async def relay(self, call: Any, framing: sse.Framing) -> None:
        """Stream ``call``'s messages as server-sent events, framed by ``framing``.

        Headers wait for the first event, so an error before it is an ordinary
        JSON error response with its status; an error after it is written as
        the API's error events, and the stream always ends the API's way.
        """
        self.call = call
        started = False
        try:
            async for message in call:
                data = framing.event(message)
                if data is None:
                    continue
                if not started:
                    self._start_events()
                    started = True
                self.write(data)
                await self.flush()  # per event: the client sees each one now; raises if it left
        except grpc.aio.AioRpcError as error:
            if self.client_gone:
                return
            failure = from_rpc_error(error)
            if not started:
                raise failure from None
            log.warning("stream %s failed after it began: %s", self.request_id, failure)
            self.write(framing.failure(failure))
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
        self.write(framing.end())
        with contextlib.suppress(StreamClosedError):  # the client left right after the last event
            await self.finish()

    def _start_events(self) -> None:
        for name, value in sse.HEADERS.items():
            self.set_header(name, value)


def _http_type(status: int) -> str:
    if status >= 500:
        return "server_error"
    return {401: "authentication_error", 403: "permission_error"}.get(status, "invalid_request_error")


@tornado.web.stream_request_body
class JsonBodyHandler(BridgeHandler):
    """A POST handler whose JSON body is read in pieces, so a body over the limit is never held in memory."""

    def prepare(self) -> None:
        self._chunks: list[bytes] = []
        self._size = 0
        length = self.request.headers.get("Content-Length")
        self._too_large = bool(length and length.isdigit() and int(length) > self.settings_.max_body_bytes)

    def data_received(self, chunk: bytes) -> None:
        # Past the limit the rest is read and dropped: closing early would leave the client
        # writing into a closed socket instead of reading its 413.
        if self._too_large:
            return
        self._size += len(chunk)
        if self._size > self.settings_.max_body_bytes:
            self._too_large, self._chunks = True, []
        else:
            self._chunks.append(chunk)

    async def translated(self, translate: Callable[[dict[str, Any]], T]) -> T:
        """The JSON body, parsed and passed through ``translate`` (413, 415 or 400 otherwise).

        A large body is parsed and translated in a worker thread, so other
        requests and their streams go on meanwhile. A refusal is only answered
        once the caller's key is known to be good: 401 comes before 400.
        """
        depth = self.settings_.max_json_depth
        return await self.translated_body(
            lambda body, content_type: translate(parse_json_body(body, content_type, depth))
        )

    async def translated_body(self, translate: Callable[[bytes, str | None], T]) -> T:
        """The raw body and its Content-Type passed through ``translate``, as ``translated`` does (a form, say)."""
        try:
            if self._too_large:
                limit = self.settings_.max_body_bytes
                raise BridgeError(413, f"the request body is larger than {limit} bytes", code="request_too_large")
            return await off_the_loop_if_large(self._size, lambda: self._translate(translate))
        except BridgeError:
            await self.check_key()
            raise

    def _translate(self, translate: Callable[[bytes, str | None], T]) -> T:
        body = b"".join(self._chunks)
        self._chunks = []  # the parsed body is all that is kept from here on
        return translate(body, self.request.headers.get("Content-Type"))


class NotFoundHandler(BridgeHandler):
    """Any other path: 404 in OpenAI's envelope (OpenAI's wording)."""

    def prepare(self) -> None:
        raise BridgeError(404, f"Invalid URL ({self.request.method} {self.request.path})")
