"""Models loaded and unloaded at run time (issue 45): ModelService.LoadModel and UnloadModel.

The models are the ones the configuration knows (the file's, ``--model``'s, the bundled ones); each has one state
in the registry (service/model_states.py), and only this module (and the start-up load, through ``load``) changes
it. A model's loads and unloads take turns (one lock per model); a load asked for while one runs follows that one
(two requests, one load). A load naming a model not declared at start, with its source and settings, adds it to
the known models first (resolved, and converted when needed, in a thread too). A load runs in an executor thread:
``load_model`` blocks until the engine process has compiled the model, and the event loop streams the other
models' tokens meanwhile. An unload takes the model out
of the routing table at once, waits for the calls naming it and its process's work to end (or, forced, fails them
with a retriable UNAVAILABLE that says why), then ends its processes: their memory goes back with them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

import grpc
from google.protobuf import json_format

from ovserve.clients.v1 import model_pb2
from ovserve.service.api.models import describe
from ovserve.service.errors import InvalidArgument, NotFound, ServiceError, quote
from ovserve.service.model_states import ModelState
from ovserve.service.models import Model, ModelRegistry, ModelSpec, ServedModel
from ovserve.service.observability import metrics
from ovserve.service.sources import Provenance, SourceError
from ovserve.service.workers import Served
from ovserve.service.workers.errors import EngineError

log = logging.getLogger(__name__)

#: How often a draining unload looks whether the model's calls have ended (its forced escalation ends the wait).
DRAIN_POLL_SECONDS = 0.05
#: How long a draining unload waits for the process's figures before it looks again (a wedged process never answers).
BUSY_ANSWER_SECONDS = 2.0
#: The longest name a model loaded at run time may take (as a LoRA adapter's: Hugging Face's ids stay under 100).
MAX_MODEL_NAME_CHARS = 256


class ModelAdmin:
    """Loads and unloads the models of ``specs`` in ``registry``.

        ``load`` builds a model from its spec (blocking: it runs in a thread); ``started`` makes a loaded model serve
        (the server starts its process's messages and watches it); ``changed`` is told after every state change
        (health follows); ``calls_using`` counts the API calls under way naming any of the given models; ``declare``
        makes the spec of a model not declared at start from its name, source and settings (blocking: it may convert;
        None: such loads are refused, as they are without admin keys); ``admission`` is entered around each load and may
        unload other models first, or refuse the load (then the model's state does not change); ``prepare`` makes a spec
    ready to load (blocking: it resolves, and may convert, a model offered unresolved).
    """

    def __init__(
        self,
        registry: ModelRegistry,
        specs: Sequence[ModelSpec],
        load: Callable[[ModelSpec], Model],
        started: Callable[[Model], None],
        changed: Callable[[], None],
        calls_using: Callable[[Iterable[str]], int],
        declare: Callable[[str, str, dict[str, Any]], ModelSpec] | None = None,
        admission: Callable[[str], AbstractAsyncContextManager[None]] | None = None,
        prepare: Callable[[ModelSpec], ModelSpec] = lambda spec: spec,
    ) -> None:
        self._registry = registry
        self._specs = {spec.name: spec for spec in specs}
        registry.states.know(self._specs, {spec.name: spec.task.value for spec in specs})
        for spec in specs:
            registry.states.know_adapters(spec.name, spec.lora)
        self._load, self._started, self._changed, self._calls_using = load, started, changed, calls_using
        self._declare = declare
        self._admission = admission or _admitted  # may make room first (service/server/model_keeper.py)
        self._prepare = prepare
        self._turns: dict[str, asyncio.Lock] = {}  # one per model: its loads and unloads one at a time
        self._loading: dict[str, asyncio.Task[None]] = {}
        self._unloading: dict[str, asyncio.Task[None]] = {}
        self._forced: dict[str, asyncio.Event] = {}  # set: the draining unload of that model fails what runs
        self._leaving: dict[str, Served] = {}  # the processes of models being unloaded (out of the registry)
        self._closed = False  # the server stops: a load finishing now ends its process instead of serving
        self._forgetting: set[str] = set()  # models being removed (a configuration reload): no load starts

    async def load(self, name: str) -> None:
        """Load the known model ``name`` unless it is loaded; a load under way is followed, not repeated.

        NotFound for a name the configuration does not know; the EngineError naming the cause if the load fails
        (the model is then FAILED with that reason).
        """
        self._spec(name)
        task = self._loading.get(name)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._load_now(name))
            self._loading[name] = task
            task.add_done_callback(lambda _: self._loading.pop(name, None))
        await asyncio.shield(task)  # a caller who leaves does not stop the load others may wait for

    async def stream_load(self, request: model_pb2.LoadModelRequest) -> AsyncIterator[model_pb2.LoadModelResponse]:
        """LoadModel: "loading" (unless it is loaded), then "loaded" with the model; a model not declared at start is
        added first, from the request's source and settings."""
        adding = bool(request.source) or request.HasField("settings")
        if adding:
            yield model_pb2.LoadModelResponse(state=ModelState.LOADING.value)
            await self._add(request)
        self._spec(request.model)
        status = self._registry.states.get(request.model)
        if not adding and (status is None or status.state is not ModelState.LOADED):
            yield model_pb2.LoadModelResponse(state=ModelState.LOADING.value)
        try:
            await self.load(request.model)
        except ServiceError:
            raise
        except Exception as error:  # the model is FAILED with that cause
            raise ServiceError(_cause(error), code=grpc.StatusCode.INTERNAL, reason="MODEL_LOAD_FAILED") from None
        model = describe(self._registry, request.model)
        yield model_pb2.LoadModelResponse(state=ModelState.LOADED.value, model=model)

    async def unload(
        self, request: model_pb2.UnloadModelRequest, reason: str = "admin"
    ) -> model_pb2.UnloadModelResponse:
        """UnloadModel: drain (or, with ``force``, fail) the model's requests, then end its process; ``reason``:
        why, as ovserve_model_unloads counts it (admin, idle, room)."""
        name = request.model
        self._spec(name)
        forced = self._forced.setdefault(name, asyncio.Event())
        if request.force:
            forced.set()  # also escalates an unload already draining
        task = self._unloading.get(name)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._unload_now(name, forced, reason))
            self._unloading[name] = task
            task.add_done_callback(lambda _: self._end_unload(name))
        await asyncio.shield(task)  # asked once, it finishes even if its caller leaves
        return model_pb2.UnloadModelResponse(model=describe(self._registry, name))

    async def _add(self, request: model_pb2.LoadModelRequest) -> None:
        """Make the model ``request`` names known from its source and settings (resolved in a thread: a conversion
        takes minutes); INVALID_ARGUMENT naming what is wrong, ALREADY_EXISTS for a name served or known."""
        name = request.model
        if self._declare is None:
            raise ServiceError(
                "loading a model not declared at start needs a server with admin keys (--admin-key-file)",
                code=grpc.StatusCode.PERMISSION_DENIED, reason="PERMISSION_DENIED", param="source",
            )  # fmt: skip
        _check_name(name)
        settings = json_format.MessageToDict(request.settings)
        async with self._turn(name):
            served_adapters = {adapter.name for adapter in self._registry.adapters()}  # (some loaded at run time)
            if self._registry.states.base(name) is not None or name in served_adapters:
                raise ServiceError(
                    f"model {quote(name)} is known already (its source and settings are the configuration's)",
                    code=grpc.StatusCode.ALREADY_EXISTS, reason="ALREADY_EXISTS", param="model",
                )  # fmt: skip
            declare = self._declare
            try:
                spec = await asyncio.to_thread(lambda: declare(name, request.source, settings))
            except (ValueError, OSError) as error:  # ConfigError, SourceError, unreadable files: in words
                raise InvalidArgument.of(
                    "source" if isinstance(error, SourceError) else "settings", str(error)
                ) from None
            self.declare_spec(spec)

    @property
    def specs(self) -> dict[str, ModelSpec]:
        """Every known model's spec, by name, in the order they became known (a copy)."""
        return dict(self._specs)

    def declare_spec(self, spec: ModelSpec) -> None:
        """Know ``spec``: a new model (AVAILABLE until loaded), or new settings of a known one, which apply from
        its next load (a configuration reload unloads a changed model first)."""
        self._specs[spec.name] = spec
        self._registry.states.know([spec.name], {spec.name: spec.task.value})
        self._registry.states.know_adapters(spec.name, spec.lora)
        self._changed()

    async def forget(self, name: str) -> None:
        """Unload ``name`` (draining its calls), then forget it: a request naming it gets NOT_FOUND from then on.
        Loads asked for meanwhile do not happen (their callers get NOT_FOUND)."""
        self._spec(name)
        self._forgetting.add(name)
        try:
            while True:
                await self.unload(model_pb2.UnloadModelRequest(model=name))
                async with self._turn(name):
                    if name not in self._registry.names:  # (a load that began before the forget is unloaded too)
                        self._specs.pop(name, None)
                        self._registry.states.forget(name)
                        metrics.forget_model(name)
                        break
        finally:
            self._forgetting.discard(name)
        self._changed()

    def _end_unload(self, name: str) -> None:
        self._unloading.pop(name, None)
        self._forced.pop(name, None)

    async def _load_now(self, name: str) -> None:
        async with self._turn(name):
            if name in self._registry.names:
                return
            if name in self._forgetting:
                raise NotFound(f"model {quote(name)} is being removed from this server", param="model")
            async with self._admission(name):
                began = time.monotonic()
                model, provenance = await self._loaded(name)
                metrics.MODEL_LOAD_SECONDS.labels(name).observe(time.monotonic() - began)
            if self._closed:  # the server stopped while it loaded: nothing would ever end its process
                await asyncio.to_thread(model.worker.close)
                return
            self._started(model)
            self._registry.add(model, provenance)
            self._set(name, ModelState.LOADED)
            log.info("model %r loaded", name)

    async def _loaded(self, name: str) -> tuple[Model, Provenance | None]:
        """The model ``name`` loaded from its spec, in an executor thread, and what it was built from; FAILED with
        the cause if that fails. The spec stays as declared (a reload compares it with the file's): a model offered
        unresolved is resolved at each load, from the model cache after its first."""
        self._set(name, ModelState.LOADING)
        spec = self._specs[name]

        def load() -> tuple[Model, Provenance | None]:
            ready = self._prepare(spec)
            return self._load(ready), ready.provenance

        try:
            return await asyncio.get_running_loop().run_in_executor(None, load)
        except Exception as error:  # an EngineError names the signal or exception and the settings
            self._set(name, ModelState.FAILED, _cause(error))
            raise
        except BaseException:  # (cancelled: the server stops)
            self._set(name, ModelState.FAILED, "its load was cancelled")
            raise

    async def unload_idle(self, name: str, reason: str) -> bool:
        """Unload ``name`` if nothing uses it now: no call names it or its adapters, and its process runs and
        queues nothing (an idle unload, an eviction); whether it did. A call that arrives while it drains still
        runs to its end first."""
        model = next((model for model in self._registry if model.name == name), None)
        if model is None or name in self._unloading:
            return False
        adapters = model.adapters() if isinstance(model, ServedModel) else []
        names = {name, *(adapter.name for adapter in adapters)}
        if self._calls_using(names) or await _busy(model.worker) or self._calls_using(names):
            return False
        await self.unload(model_pb2.UnloadModelRequest(model=name), reason)
        return True

    async def _unload_now(self, name: str, forced: asyncio.Event, reason: str) -> None:
        async with self._turn(name):
            if name not in self._registry.names:
                return
            model = self._registry.remove(name)  # new requests are refused from now on, naming the state
            self._leaving[name] = model.worker
            self._set(name, ModelState.UNLOADING)
            adapters = model.adapters() if isinstance(model, ServedModel) else []
            names = {name, *(adapter.name for adapter in adapters)}
            await self._drain(model.worker, names, forced)
            if forced.is_set():
                model.worker.end_requests(f"model {quote(name)} was unloaded (force)")
            # Its processes end, and their memory with them; in a thread: stopping one waits for its exit.
            await asyncio.to_thread(model.worker.close)
            self._leaving.pop(name, None)
            self._set(name, ModelState.AVAILABLE)
            metrics.MODEL_UNLOADS.labels(name, reason).inc()
            log.info("model %r unloaded%s", name, " (force)" if forced.is_set() else "")

    async def _drain(self, worker: Served, names: set[str], forced: asyncio.Event) -> None:
        """Until no call names the model (or its adapters) and its process runs and queues nothing, or ``forced``."""
        # asyncio.wait, not wait_for: Python 3.11's wait_for can swallow a cancellation (a stopping server's).
        forcing = asyncio.ensure_future(forced.wait())
        try:
            while not forced.is_set() and (self._calls_using(names) or await _busy(worker)):
                await asyncio.wait([forcing], timeout=DRAIN_POLL_SECONDS)
        finally:
            forcing.cancel()

    def close(self) -> None:
        """The server stops: end the processes of models still draining (what they run fails), and of loads that
        finish from now on (the registry, which ends the served ones, no longer holds these)."""
        self._closed = True
        for name, worker in list(self._leaving.items()):
            worker.end_requests(f"the server is shutting down while model {quote(name)} was being unloaded")
            worker.close()

    def _spec(self, name: str) -> ModelSpec:
        spec = self._specs.get(name)
        if spec is None:
            known = ", ".join(self._specs) or "none"
            raise NotFound(f"model {quote(name)} is not known to this server (known: {known})", param="model")
        return spec

    def _turn(self, name: str) -> asyncio.Lock:
        return self._turns.setdefault(name, asyncio.Lock())

    def _set(self, name: str, state: ModelState, reason: str = "") -> None:
        self._registry.states.set(name, state, reason)
        self._changed()


@contextlib.asynccontextmanager
async def _admitted(name: str) -> AsyncIterator[None]:
    """Every load is admitted (no memory budget)."""
    yield


def _check_name(name: str) -> None:
    """A name requests can give as ``model``: printable, of bounded length."""
    if not name or len(name) > MAX_MODEL_NAME_CHARS or not name.isprintable():
        raise InvalidArgument.of("model", f"must be printable text of 1 to {MAX_MODEL_NAME_CHARS} characters")


def _cause(error: Exception) -> str:
    """What made a load fail, in words: an EngineError's own (signal or exception, and settings), else the
    exception's type and message (a model's files the server itself reads, such as its tokenizer)."""
    return str(error) if isinstance(error, EngineError) else f"{type(error).__name__}: {error}"


async def _busy(worker: Served) -> bool:
    """Whether the model's process runs or queues work (a process that is not running has none; one that does not
    answer in time counts as busy, so that a force sent meanwhile is heard)."""
    asking = asyncio.ensure_future(worker.load())
    try:
        await asyncio.wait([asking], timeout=BUSY_ANSWER_SECONDS)
    finally:
        answered = asking.done()
        if not answered:
            asking.cancel()
    if not answered:
        return True
    try:
        load = asking.result()
    except EngineError:
        return False
    return load.running + load.waiting > 0
