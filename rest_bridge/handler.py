"""The handlers every route builds on: read the body, call the gRPC stub, write OpenAI JSON or SSE.

Route handlers are thin: ``translate`` turns OpenAI JSON into proto requests, ``render`` turns proto replies
into OpenAI JSON, ``errors`` maps every failure to OpenAI's envelope. What lives here is HTTP: request ids,
metadata, deadlines, the body limit, the body's guards (the key checked before a large body is read, a minimum
pace, everything let go of when a body is abandoned), the event stream, and cancelling the gRPC call the moment
the client goes away.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
import re
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import grpc
import tornado.httputil
import tornado.ioloop
import tornado.web
from google.protobuf.message import Message
from opentelemetry import trace
from tornado.iostream import StreamClosedError

from ovserve.clients.keep_alive import KEEP_ALIVE_KEY, keep_alive_seconds
from ovserve.clients.tracing import extracted, injected
from ovserve.clients.v1 import model_pb2
from ovserve.rest_bridge import cors, sse
from ovserve.rest_bridge.backend import Backend
from ovserve.rest_bridge.config import BridgeSettings
from ovserve.rest_bridge.errors import REASONS, BridgeError, from_rpc_error, rate_limit_headers
from ovserve.rest_bridge.http_guard import close_gracefully
from ovserve.rest_bridge.json_body import encode_json
from ovserve.rest_bridge.key_check import body_may_be_large, keys_seen
from ovserve.rest_bridge.off_loop import INLINE_BODY_BYTES, off_the_loop_if_large
from ovserve.rest_bridge.translate.body import bad_request, parse_json_body

tracer = trace.get_tracer("ovserve.rest_bridge")

log = logging.getLogger(__name__)
T = TypeVar("T")
RETRIABLE = {429, 503}  # statuses answered with Retry-After
_REQUEST_ID = re.compile(r"[\x21-\x7e]{1,128}")  # what a gRPC metadata value and a log line can carry


@tornado.web.stream_request_body
class BridgeHandler(tornado.web.RequestHandler):
    """Base of every bridge handler: request ids, gRPC metadata, OpenAI error bodies, client-gone cancellation.

    Every request body, on any route, is read in pieces (``body_received``; a handler that takes none drops
    them), with three guards on the way in:

    - A body that may be large is read only once the service has accepted the caller's key (``KeysSeen``), so
      an upload without a valid key gets its 401 before it is read, let alone spooled.
    - A body must keep pace: ``body_grace_seconds``, plus one second per ``min_body_rate`` bytes received;
      past that it gets 408 and its connection is closed (tornado cannot go on reading a body it has answered).
    - A client leaving mid-body ends the handler and lets go of its buffers and files at once (``release``).
    """

    backend: Backend
    settings_: BridgeSettings

    def initialize(self, backend: Backend, settings: BridgeSettings) -> None:  # type: ignore[override]
        self.backend = backend
        self.settings_ = settings
        self.call: Any = None  # the gRPC call in flight, cancelled if the client leaves
        self.client_gone = False
        self._released = False
        self._body_requested = False  # prepare() let tornado read the body
        self.keep_alive: str | None = None  # a body's keep_alive, in seconds ("-1": until unloaded)
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
        if self.keep_alive is not None:
            sent = (*sent, (KEEP_ALIVE_KEY, self.keep_alive))
        return injected(sent, trace.set_span_in_context(self.span))

    def on_finish(self) -> None:
        """Let go of what the request holds (``release``); a body refused before it was read (401, 413) is not read:
        the connection is closed gracefully after the answer (tornado's own close would reset it under a client
        still sending, which can destroy the answer before it is read)."""
        if not self._body_requested and _declares_body(self.request.headers) and not self.client_gone:
            stream = self.request.connection.detach()  # type: ignore[union-attr]  # tornado then reads no body
            tornado.ioloop.IOLoop.current().spawn_callback(close_gracefully, stream)
        self.release()

    def release(self) -> None:
        """Once: let go of the request's body (``release_body``) and end its span with the HTTP status. From
        on_finish, or from on_connection_close when the client left mid-body (tornado then never finishes)."""
        if self._released:
            return
        self._released = True
        self.release_body()
        self.span.set_attribute("http.response.status_code", self.get_status())
        if self.get_status() >= 500:
            self.span.set_status(trace.StatusCode.ERROR)
        self.span.end()

    def release_body(self) -> None:
        """Drop what holds the request body (buffered chunks, a spool file; a handler reading one adds what)."""
        if hasattr(self, "_pace"):  # prepare() began
            self._stop_pace()

    async def prepare(self) -> None:
        """Check the key if the body may be large, then ``prepare_body``; the body is read after this returns."""
        self._body_bytes = 0
        self._pace: object | None = None  # the pace check's timeout handle, while the body arrives
        if not _PRINTABLE.fullmatch(self.request.headers.get("Authorization", "")):
            # gRPC metadata carries printable ASCII only (such a key failed the call with a 500); no key the server
            # holds has other characters, so it is refused as any wrong key is.
            raise BridgeError(401, "the API key holds characters other than printable ASCII", type=_http_type(401))
        if body_may_be_large(self.request.headers):
            await keys_seen(self.backend.models).check(self.request.headers.get("Authorization", ""), self.check_key)
        if self.client_gone:
            return  # left during the check: on_connection_close let go of everything already
        self.prepare_body()
        body = _streamed_body(self.request)
        if body is not None and not body.done() and not self._finished and self.settings_.min_body_rate > 0:
            loop = tornado.ioloop.IOLoop.current()
            self._body_started = loop.time()
            self._pace = loop.call_at(self._body_started + self.settings_.body_grace_seconds, self._check_pace)
            body.add_done_callback(lambda _: self._stop_pace())  # read whole, or abandoned: no pace to keep
        self._body_requested = True

    def _stop_pace(self) -> None:
        if self._pace is not None:
            tornado.ioloop.IOLoop.current().remove_timeout(self._pace)
            self._pace = None

    def prepare_body(self) -> None:
        """Get ready for the body (refuse it from its headers, by raising); the request's key is known good."""

    def body_received(self, chunk: bytes) -> None:
        """The next piece of the body; dropped by a handler that takes none."""

    def data_received(self, chunk: bytes) -> None:
        if self._released:  # answered (408) or abandoned: what tornado still delivers is dropped
            return
        self._body_bytes += len(chunk)
        self.body_received(chunk)

    def _check_pace(self) -> None:
        """Refuse the body with 408 if it fell behind its pace, else look again when it would."""
        settings = self.settings_
        due = self._body_started + settings.body_grace_seconds + self._body_bytes / settings.min_body_rate
        loop = tornado.ioloop.IOLoop.current()
        if loop.time() < due:
            self._pace = loop.call_at(due, self._check_pace)
            return
        self._pace = None
        message = (
            f"the request body arrived slower than {settings.min_body_rate} bytes per second after its first "
            f"{settings.body_grace_seconds:g} seconds ({self._body_bytes} bytes received)"
        )
        slow = BridgeError(408, message, code="request_timeout")
        if self._headers_written:  # cannot be answered any more: the close is the answer
            self.request.connection.close()  # type: ignore[union-attr]
            return
        self.send_error(408, exc_info=(BridgeError, slow, None))  # then tornado closes: the body is left unread

    def grpc_options(self) -> dict[str, Any]:
        """Keyword arguments of every stub call: deadline and metadata."""
        return {"timeout": self.settings_.deadline_seconds, "metadata": self.metadata()}

    async def check_key(self) -> bool:
        """Raise the service's 401 if it refuses the caller's key; the key itself is known only to the service.
        Return whether the service accepted it (False: it did not answer, which says nothing about the key).

        Called before answering a refusal of the bridge's own (bad body, too
        large), so a caller without a valid key learns nothing about the API
        from its refusals, and before reading a large body. One cheap
        authenticated call, and only on those paths.
        """
        try:
            await self.backend.models.ListModels(
                model_pb2.ListModelsRequest(), timeout=self.settings_.health_timeout_seconds, metadata=self.metadata()
            )
        except grpc.aio.AioRpcError as error:
            if error.code() == grpc.StatusCode.UNAUTHENTICATED:
                raise from_rpc_error(error) from None
            return False  # any other failure says nothing about the key: a refusal stands, a body is read
        return True

    def on_connection_close(self) -> None:
        # The client left: stop generating for it now (the engine frees the request and its KV cache).
        self.client_gone = True
        if self.call is not None:
            self.call.cancel()
        body = _streamed_body(self.request)
        mid_body = body is not None and not body.done()
        super().on_connection_close()  # fails that future: the handler's coroutine ends, without finish()
        if mid_body:  # so nothing else lets go of the body: its buffers and spool file go now
            self.set_status(499, REASONS[499])
            self.release()

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
        for name, value in error.headers:
            self.set_header(name, value)
        self.set_header("Content-Type", "application/json")
        self.finish(encode_json(error.envelope()))

    async def unary(self, method: Any, request: Message) -> Any:
        """Call a unary RPC; a gRPC error becomes a BridgeError, a vanished client ends the handler quietly."""
        self.call = method(request, **self.grpc_options())
        async with self.call_errors():
            reply = await self.call
            await self.send_rate_limits()
            return reply

    async def send_rate_limits(self) -> None:
        """Send the call's x-ratelimit-* figures (its initial metadata) as headers, as OpenAI does on success."""
        for name, value in rate_limit_headers(await self.call.initial_metadata()):
            self.set_header(name, value)

    @contextlib.asynccontextmanager
    async def call_errors(self) -> AsyncIterator[None]:
        """Around awaiting ``self.call``: a gRPC error becomes a BridgeError, and the call cancelled because the
        client left becomes 499 (nobody reads the answer; it is what the access log records)."""
        try:
            yield
        except grpc.aio.AioRpcError as error:
            raise from_rpc_error(error) from None
        except asyncio.CancelledError:
            if self.client_gone:
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
                    await self.send_rate_limits()
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
        # Each event goes out as it is flushed: tornado leaves Nagle's algorithm on between responses, so on a kept
        # alive connection a stream's small events waited for the client's delayed ACK (~40 ms; tornado sets
        # no-delay only for a response's last write, and resets it when the response finishes).
        stream = getattr(self.request.connection, "stream", None)
        if stream is not None:
            stream.set_nodelay(True)


def _streamed_body(request: tornado.httputil.HTTPServerRequest) -> asyncio.Future[None] | None:
    """tornado's future of a streamed body (stream_request_body): pending while the body arrives, done once it
    is whole, failed (by RequestHandler.on_connection_close) when the client left first. None without one."""
    return getattr(request, "_body_future", None)


_PRINTABLE = re.compile(r"[\x20-\x7e]*")  # what gRPC metadata values may hold


def _declares_body(headers: tornado.httputil.HTTPHeaders) -> bool:
    """Whether the request has a body (a non-zero Content-Length, or chunked)."""
    return "Transfer-Encoding" in headers or headers.get("Content-Length", "0").strip() not in ("", "0")


def _http_type(status: int) -> str:
    if status >= 500:
        return "server_error"
    return {401: "authentication_error", 403: "permission_error"}.get(status, "invalid_request_error")


class JsonBodyHandler(BridgeHandler):
    """A POST handler whose JSON body is read in pieces, so a body over the limit is never held in memory."""

    def prepare_body(self) -> None:
        self._chunks: list[bytes] = []
        self._size = 0
        length = self.request.headers.get("Content-Length")
        self._too_large = bool(length and length.isdigit() and int(length) > self.settings_.max_body_bytes)

    def body_received(self, chunk: bytes) -> None:
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
            lambda body, content_type: translate(self._keep_alive_taken(parse_json_body(body, content_type, depth)))
        )

    def _keep_alive_taken(self, body: dict[str, Any]) -> dict[str, Any]:
        """``body`` without Ollama's ``keep_alive`` where it names a model: the keep-alive travels as the call's
        metadata (KEEP_ALIVE_KEY, in seconds); 400 naming it when it is not a duration."""
        if "model" not in body:
            return body
        if body.get("keep_alive") is None:  # (JSON null: not given)
            body.pop("keep_alive", None)
            return body
        try:
            seconds = keep_alive_seconds(body.pop("keep_alive"))
        except ValueError as error:
            raise bad_request("keep_alive", f"keep_alive: {error}") from None
        self.keep_alive = "-1" if math.isinf(seconds) else repr(seconds)
        return body

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

    def release_body(self) -> None:
        self._chunks = []
        super().release_body()

    def _translate(self, translate: Callable[[bytes, str | None], T]) -> T:
        body = b"".join(self._chunks)
        self._chunks = []  # the parsed body is all that is kept from here on
        return translate(body, self.request.headers.get("Content-Type"))


class NotFoundHandler(BridgeHandler):
    """Any other path: 404 in OpenAI's envelope (OpenAI's wording)."""

    def _not_found(self, *args: str) -> None:
        raise BridgeError(404, f"Invalid URL ({self.request.method} {self.request.path})")

    # After the body (dropped as it arrives), so the connection is kept alive as for any other answer.
    get = head = post = put = patch = delete = options = _not_found
