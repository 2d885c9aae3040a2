"""The policy every API call passes through: API key, concurrency bound, request id, access log.

Health checking and reflection stay open (load balancers and grpcurl users
have no key) and do not count against the bound.

Request bytes that protobuf cannot decode (corrupt, or nested past its
100-level limit) are not grpc's UNKNOWN with decoder internals: the
deserializer hands over an ``Undecodable`` note, and the call is refused with
INVALID_ARGUMENT after the API-key check (a caller without a key learns
nothing about the decoder).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import hmac
import logging
import math
import re
import secrets
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
from opentelemetry import trace

from ovserve.clients.defaults import BATCH_OWNER_KEY, BATCH_TOKEN_KEY
from ovserve.clients.keep_alive import KEEP_ALIVE_KEY
from ovserve.clients.tracing import extracted
from ovserve.service.errors import InvalidArgument, NotFound, ResourceExhausted, ServiceError, to_rpc_status
from ovserve.service.limits import ConcurrencyLimit, clamped
from ovserve.service.observability import metrics, tracing
from ovserve.service.observability.logs import request_id
from ovserve.service.server.rate_limits import Admission, KeyLimiter, runs_a_model, token_estimate
from ovserve.service.store.key_file import ADMIN, KeyPolicy
from ovserve.service.store.tenancy import TokenTally, fingerprint, models_allowed, tenant, tokens_used

log = logging.getLogger("ovserve.access")

OPEN_SERVICES = ("/grpc.health.v1.Health/", "/grpc.reflection.")
# The RPCs that run the engine, and so count against --max-concurrent-requests.
_GENERATES = re.compile(r"^/ovserve\.v1\.\w+/(Create|Stream)\w+$")
# The RPCs that change which models are loaded: with keys on, only an admin key (--admin-key-file) may call them.
ADMIN_METHODS = frozenset(
    {
        "/ovserve.v1.ModelService/LoadModel",
        "/ovserve.v1.ModelService/UnloadModel",
        "/ovserve.v1.ModelService/ReloadConfig",
    }
)
ADMIN_ONLY = "loading, unloading and reloading models needs an admin key (--admin-key-file)"
# Calls of these services are not counted as using the model they name (an unload waits for the others).
_NOT_MODEL_USE = "/ovserve.v1.ModelService/"
REQUEST_ID_KEY = "x-request-id"  # metadata the caller may send, echoed in the response's initial metadata
MAX_REQUEST_ID = 128


@dataclass(frozen=True)
class Undecodable:
    """What the deserializer hands over for bytes that are not a valid request message."""

    reason: str


def tolerant(deserialize: Callable[[bytes], Any], message: str) -> Callable[[bytes], Any]:
    """``deserialize``, returning an Undecodable instead of raising."""

    def decode(data: bytes) -> Any:
        try:
            return deserialize(data)
        except Exception as error:  # protobuf's DecodeError, and the RecursionError of deep nesting
            text = str(error)
            too_deep = isinstance(error, RecursionError) or "depth" in text.lower()
            reason = "nested deeper than protobuf's limit of 100 levels" if too_deep else "malformed protobuf bytes"
            return Undecodable(f"the request is not a valid {message}: {reason}")

    return decode


class CallPolicyInterceptor(grpc.aio.ServerInterceptor):
    """Checks the API key, bounds concurrent calls (RESOURCE_EXHAUSTED beyond), logs each call with its request id.

    The request id (the caller's x-request-id, or a new one) also goes back in the
    response's initial metadata, so a caller can quote it.
    """

    def __init__(
        self,
        api_keys: Sequence[str] = (),
        limit: ConcurrencyLimit | None = None,
        served: Callable[[], Iterable[str]] = tuple,
        admin_keys: Sequence[str] = (),
    ) -> None:
        """``served``: the names of the served models now (the only model labels the metrics take)."""
        self._admin_keys = [key.encode() for key in admin_keys]
        self._scoped_admins: list[bytes] = []  # the key file's keys of scope=admin
        self._limiter = KeyLimiter()  # per-key limits and scopes (--api-key-file's settings)
        self.set_keys(api_keys)
        self._using: collections.Counter[str] = collections.Counter()  # calls under way by the model they name
        self._served = served
        self._limit = limit or ConcurrencyLimit()  # shared with background responses
        self.in_flight = 0  # API calls under way
        self.interactive = 0  # generating calls under way that are not batch lines
        self._interactive_ended = -math.inf  # when the last of them ended (time.monotonic())
        self._interactive_began = -math.inf  # when the last of them began
        #: Called as an interactive generating call begins (the batch runner gives way to it).
        self.on_interactive: Callable[[], None] = _nothing
        #: Awaited before a call naming a model runs, with the model and the call's keep-alive metadata (the model
        #: keeper loads a model that is not loaded); what it raises refuses the call.
        self.model_ready: Callable[[str, str | None], Awaitable[None]] = _ready
        #: Called as a call naming a model ends, with the model (its last use).
        self.model_used: Callable[[str], None] = _used
        #: What the batch runner's calls carry (BATCH_TOKEN_KEY): made per process, never sent elsewhere.
        self.internal_token = secrets.token_hex(32)

    def set_keys(self, api_keys: Sequence[str]) -> None:
        """The API keys calls must bear from now on (none: every call is let in); admin keys are API keys too."""
        self._api_keys = [key.encode() for key in api_keys]
        self._keys = [*self._api_keys, *self._admin_keys] if self._api_keys else []

    def set_admin_keys(self, admin_keys: Sequence[str]) -> None:
        """The admin keys from now on (--admin-key-file read again on SIGHUP); the API keys stay."""
        self._admin_keys = [key.encode() for key in admin_keys]
        self.set_keys([key.decode() for key in self._api_keys])

    def set_policies(self, policies: Mapping[str, KeyPolicy]) -> None:
        """What each key of the key file may do from now on (read again on SIGHUP): its limits (a key keeps what
        it used of them), models and scope."""
        self._limiter.set_policies({fingerprint(key): policy for key, policy in policies.items()})
        self._scoped_admins = [key.encode() for key, policy in policies.items() if policy.scope == ADMIN]

    def calls_using(self, names: Iterable[str]) -> int:
        """API calls under way that name one of the models ``names`` (an unload drains them)."""
        return sum(self._using[name] for name in names)

    @contextlib.asynccontextmanager
    async def _use(
        self, method: str, request: Any, metadata: dict[str, Any], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[None]:
        """Count the call as using the model it names while it runs; the model is made ready first (loaded if it
        is not: ``model_ready``), and its use noted at the end (``model_used``)."""
        model = "" if method.startswith(_NOT_MODEL_USE) else str(getattr(request, "model", ""))
        self._using[model] += 1
        try:
            if model:
                keep_alive = metadata.get(KEEP_ALIVE_KEY)
                try:
                    await self.model_ready(model, None if keep_alive is None else str(keep_alive))
                except ServiceError as error:
                    await context.abort_with_status(to_rpc_status(error))
            yield
        finally:
            self._using[model] -= 1
            if not self._using[model]:
                del self._using[model]
            if model:
                self.model_used(model)

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(details)
        if handler is None or details.method.startswith(OPEN_SERVICES):
            return handler
        metadata = dict(details.invocation_metadata or ())
        deserialize = tolerant(handler.request_deserializer, _request_type(details.method))
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                self._unary(handler.unary_unary, details.method, metadata),
                request_deserializer=deserialize,
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(
                self._streaming(handler.unary_stream, details.method, metadata),
                request_deserializer=deserialize,
                response_serializer=handler.response_serializer,
            )
        if handler.stream_unary is not None:  # an upload: its messages are checked as they come
            upload = handler.stream_unary
            return grpc.stream_unary_rpc_method_handler(
                self._unary(lambda requests, context: upload(_decoded(requests), context), details.method, metadata),
                request_deserializer=deserialize,
                response_serializer=handler.response_serializer,
            )
        return handler  # ovserve has no bidirectional RPCs

    def _unary(self, behavior: Callable[..., Any], method: str, metadata: dict[str, Any]) -> Callable[..., Any]:
        async def guarded(request: Any, context: grpc.aio.ServicerContext) -> Any:
            started, status = self._enter(metadata), "OK"
            with _current(_span(method, metadata, request), end=True) as span:
                try:
                    release = await self._admit(method, metadata, context, request)
                    self.in_flight += 1
                    try:
                        async with self._use(method, request, metadata, context):
                            return await behavior(request, context)
                    finally:
                        self.in_flight -= 1
                        release()
                except BaseException as error:
                    status = _status_of(error, context)
                    raise
                finally:
                    self._ended(method, request, status, started, span=span)

        return guarded

    def _streaming(self, behavior: Callable[..., Any], method: str, metadata: dict[str, Any]) -> Callable[..., Any]:
        async def guarded(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            started, status, messages = self._enter(metadata), "OK", 0
            # The span is current only while the handler runs, never across a yield: a client that leaves
            # early gets this generator closed by the event loop's finaliser, in another context, where
            # OpenTelemetry cannot detach a context attached here ("Failed to detach context" at ERROR).
            span = _span(method, metadata, request)
            try:
                with _current(span):
                    release = await self._admit(method, metadata, context, request)
                self.in_flight += 1
                try:
                    async with (
                        self._use(method, request, metadata, context),
                        contextlib.aclosing(behavior(request, context)) as stream,
                    ):
                        while True:
                            with _current(span):
                                try:
                                    message = await anext(stream)
                                except StopAsyncIteration:
                                    break
                            messages += 1
                            yield message
                finally:
                    self.in_flight -= 1
                    release()
            except BaseException as error:
                status = _status_of(error, context)
                raise
            finally:
                self._ended(method, request, status, started, messages, span=span)
                span.end()

        return guarded

    def _ended(
        self,
        method: str,
        request: Any,
        status: str,
        started: float,
        messages: int | None = None,
        *,
        span: trace.Span,
    ) -> None:
        """Log the call, count it in the metrics, and say how it ended on its span."""
        span.set_attribute("rpc.grpc.status_code", status)
        if status != "OK":
            span.set_status(trace.StatusCode.ERROR, status)
        seconds = time.monotonic() - started
        sent = "" if messages is None else f" messages={messages}"
        log.info("rpc=%s status=%s ms=%.1f%s", method, status, seconds * 1000, sent)
        model = metrics.model_label(str(getattr(request, "model", "")), self._served())
        metrics.observe_call(method.rsplit(".", 1)[-1], model, status.lower(), seconds)

    def _enter(self, metadata: dict[str, Any]) -> float:
        sent = str(metadata.get(REQUEST_ID_KEY, ""))
        request_id.set(sent[:MAX_REQUEST_ID] if sent.isprintable() and sent else uuid.uuid4().hex)
        return time.monotonic()

    async def _admit(
        self, method: str, metadata: dict[str, Any], context: grpc.aio.ServicerContext, request: Any
    ) -> Callable[[], None]:
        """Echo the request id (and the key's x-ratelimit-* figures), then refuse the call if its key is wrong,
        its bytes undecodable, its model not the key's, its key over a limit or the server full.

        Returns what gives back the call's place of the concurrency bound and settles its key's limits (a
        no-op if it took neither). Only calls that generate take a place (reading, listing, cancelling or
        deleting stays possible under load), waiting for one in priority order if --max-queued-requests lets
        them; a call that starts a background response takes none: the run waits for its own place. A batch
        line (a call made by this server's batch runner, which alone knows ``internal_token``) acts as the
        batch's owner, is not counted as interactive, never waits and is not held to its owner's rates.
        """
        batch_line = self._batch_line(metadata)
        known = not self._keys or batch_line or self._authorized(str(metadata.get("authorization", "")))
        policy = self._limiter.policy(tenant.get()) if self._keys and known else None
        models_allowed.set(None if policy is None else policy.models)
        generating = bool(_GENERATES.match(method)) and not isinstance(request, Undecodable)
        admission = Admission(None, None, [])
        if policy is not None and generating and not batch_line and runs_a_model(request):
            admission = self._limiter.admit(tenant.get(), token_estimate(request))
        await context.send_initial_metadata(((REQUEST_ID_KEY, request_id.get()), *admission.headers))
        ticket = admission.ticket
        try:
            await self._refuse_unless_allowed(method, metadata, context, request, known=known, policy=policy)
            if admission.refusal is not None:
                await context.abort_with_status(to_rpc_status(admission.refusal))
            if not generating:
                return _nothing if ticket is None else functools.partial(ticket.settle, None)
            tally = TokenTally(settle=None if ticket is None else ticket.settle)
            tokens_used.set(tally)  # each generation adds to it (no generation seen, embeddings...: the estimate)
            if getattr(request, "background", False) is True:
                return tally.end  # (unless its run took the tally over: ovserve.service.responses.background)
            await self._take_place(context, batch_line, clamped(int(getattr(request, "priority", 0))))
        except BaseException:
            if ticket is not None:
                ticket.settle(0)  # refused or gone before it ran: its tokens go back (it counts as a request)
            raise

        settle = tally.end

        if batch_line:
            return self._limit.release
        self.interactive += 1
        self._interactive_began = time.monotonic()
        self.on_interactive()

        def release() -> None:
            self.interactive -= 1
            self._interactive_ended = time.monotonic()
            self._limit.release()
            settle()

        return release

    async def _refuse_unless_allowed(
        self,
        method: str,
        metadata: dict[str, Any],
        context: grpc.aio.ServicerContext,
        request: Any,
        *,
        known: bool,
        policy: KeyPolicy | None,
    ) -> None:
        """Abort a call without a valid key, an admin call without an admin key, undecodable bytes, and a call
        naming a model its key may not use (NOT_FOUND, as OpenAI answers a model a key has no access to)."""
        if not known:
            await context.abort(
                grpc.StatusCode.UNAUTHENTICATED, "missing or invalid API key (send authorization: Bearer <key>)"
            )
        if method in ADMIN_METHODS and (self._keys or self._admin_keys):
            await self._check_admin(str(metadata.get("authorization", "")), context)
        if isinstance(request, Undecodable):
            await context.abort_with_status(to_rpc_status(InvalidArgument(request.reason)))
        model = str(getattr(request, "model", ""))
        if policy is not None and policy.models is not None and model and model not in policy.models:
            message = f"The model {model!r} does not exist or you do not have access to it."
            await context.abort_with_status(to_rpc_status(NotFound(message, param="model")))

    async def _take_place(self, context: grpc.aio.ServicerContext, batch_line: bool, priority: int) -> None:
        """Take a place of the concurrency bound: at once, or after waiting in the queue (interactive calls,
        while it has room); refused (RESOURCE_EXHAUSTED) otherwise."""
        if self._limit.try_take():
            waited = 0.0
        elif batch_line or self._limit.call_queue_full:
            full = ResourceExhausted(
                f"the server is handling its maximum of {self._limit.limit} concurrent requests; retry later"
            )
            await context.abort_with_status(to_rpc_status(full))
            return
        else:
            waited = await self._limit.wait_as_call(priority)
        if not batch_line:
            metrics.observe_queue_wait(priority, waited)

    def interactive_within(self, seconds: float) -> bool:
        """Whether an interactive generating call runs, or ended less than ``seconds`` ago (a client sending one
        request after another is busy between them too)."""
        return self.interactive > 0 or time.monotonic() - self._interactive_ended < seconds

    def interactive_arriving(self, seconds: float) -> bool:
        """Whether an interactive generating call runs and the last one began less than ``seconds`` ago (it may
        be reading its prompt)."""
        return self.interactive > 0 and time.monotonic() - self._interactive_began < seconds

    def _batch_line(self, metadata: dict[str, Any]) -> bool:
        """Whether the call is the batch runner's (its token matches); if so, it acts as the owner it names."""
        token = str(metadata.get(BATCH_TOKEN_KEY, ""))
        if not token or not hmac.compare_digest(token.encode(), self.internal_token.encode()):
            return False
        tenant.set(str(metadata.get(BATCH_OWNER_KEY, "")))
        return True

    async def _check_admin(self, header: str, context: grpc.aio.ServicerContext) -> None:
        """Refuse a load, unload or reload without an admin key: PERMISSION_DENIED for a user's key (it is known,
        and not enough), UNAUTHENTICATED for none."""
        scheme, _, key = header.partition(" ")
        given = key.strip().encode() if scheme.lower() == "bearer" else b""
        if given and any([hmac.compare_digest(given, admin) for admin in [*self._admin_keys, *self._scoped_admins]]):
            return
        if given and any([hmac.compare_digest(given, known) for known in self._keys]):
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, ADMIN_ONLY)
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, ADMIN_ONLY)

    def _authorized(self, header: str) -> bool:
        """Whether the header holds a configured key; if so, the call acts as that key's tenant."""
        scheme, _, key = header.partition(" ")
        if scheme.lower() != "bearer":
            return False
        # compare_digest against every key: the time taken does not tell which prefix matched.
        matches = [hmac.compare_digest(key.strip().encode(), known) for known in self._keys]
        if any(matches):
            tenant.set(fingerprint(key.strip()))
        return any(matches)


async def _ready(model: str, keep_alive: str | None) -> None:
    """Every model is ready as it is (no model keeper)."""


def _used(model: str) -> None:
    """Nobody notes a model's use (no model keeper)."""


def _nothing() -> None:
    """A call that took no place gives none back."""


async def _decoded(requests: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """A client stream's messages, failing with INVALID_ARGUMENT at the first one protobuf could not decode."""
    async for message in requests:
        if isinstance(message, Undecodable):
            raise InvalidArgument(message.reason)
        yield message


def _span(method: str, metadata: dict[str, Any], request: Any) -> trace.Span:
    """The call's span, started under the caller's trace context (``traceparent``) if sent; not yet current."""
    service, _, rpc = method.lstrip("/").partition("/")
    attributes = {"rpc.system": "grpc", "rpc.service": service, "rpc.method": rpc}
    if model := str(getattr(request, "model", "")):
        attributes["gen_ai.request.model"] = model
    return tracing.tracer.start_span(
        method.lstrip("/"), context=extracted(metadata), kind=trace.SpanKind.SERVER, attributes=attributes
    )


def _current(span: trace.Span, *, end: bool = False) -> contextlib.AbstractContextManager[trace.Span]:
    """``span`` as the current span for a block (the generation's span is its child); ended after it if ``end``.

    ``_ended`` sets the status: an exception is not recorded on the span (a cancelled call is not a failure).
    """
    return trace.use_span(span, end_on_exit=end, record_exception=False, set_status_on_exception=False)


def _request_type(method: str) -> str:
    """ "/ovserve.v1.ChatService/CreateChatCompletion" -> "CreateChatCompletionRequest"."""
    return method.rsplit("/", 1)[-1] + "Request"


def _status_of(error: BaseException, context: grpc.aio.ServicerContext) -> str:
    if isinstance(error, grpc.aio.AbortError):
        code = context.code()
        return code.name if isinstance(code, grpc.StatusCode) else str(code)
    if isinstance(error, GeneratorExit | asyncio.CancelledError):
        return "CANCELLED"
    return "UNKNOWN"
