"""The gRPC server: servicers, health checking and reflection around the served models."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import time
from collections.abc import Iterable
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from ovserve.clients.defaults import MESSAGE_SIZE_OPTIONS
from ovserve.clients.gil import share_the_gil_sooner
from ovserve.clients.heap import freeze_startup_heap
from ovserve.service.api.files import FilesApi
from ovserve.service.api.lora import RuntimeLora
from ovserve.service.api.stored_chat import StoredChatCompletions
from ovserve.service.batches.api import BatchesApi
from ovserve.service.batches.runner import BatchRunner, LineExecutor
from ovserve.service.config import ConfigError, ServeConfig, key_file_policies, prepared, runtime_model
from ovserve.service.config import key_file_keys as config_keys
from ovserve.service.limits import ConcurrencyLimit
from ovserve.service.model_states import ModelState
from ovserve.service.models import Model, ModelRegistry, ModelSpec, load_model
from ovserve.service.observability import metrics
from ovserve.service.observability.endpoint import MetricsEndpoint
from ovserve.service.responses.api import ResponsesApi
from ovserve.service.responses.conversations import MAX_CONVERSATION_ITEMS, ConversationsApi
from ovserve.service.server import tls
from ovserve.service.server.config_reload import ConfigReload
from ovserve.service.server.interceptors import CallPolicyInterceptor
from ovserve.service.server.model_admin import ModelAdmin
from ovserve.service.server.model_keeper import ModelKeeper
from ovserve.service.server.reflection import enable_server_reflection
from ovserve.service.server.services import SERVED, services_down
from ovserve.service.store.batches import BatchStore
from ovserve.service.store.chat_completions import ChatCompletionStore
from ovserve.service.store.conversations import ConversationStore
from ovserve.service.store.files import FileStore
from ovserve.service.store.responses import ResponseStore

log = logging.getLogger(__name__)


class Server:
    """A running ovserve gRPC server: start, load models, stop."""

    def __init__(self, config: ServeConfig) -> None:
        # TLS on the gRPC port (None: plaintext); read and checked now, before anything listens
        self._credentials = tls.server_credentials(config.tls_cert, config.tls_key, config.tls_client_ca)
        self.config = config
        self.registry = ModelRegistry(media=config.media)
        self.store = ResponseStore(config.response_store, max_age_seconds=config.response_max_age_seconds)
        # Calls and background responses.
        self.limit = ConcurrencyLimit(config.max_concurrent_requests, config.max_queued_requests)
        self.conversations = ConversationsApi(ConversationStore(self.store, max_items=MAX_CONVERSATION_ITEMS))
        files = FileStore(self.store)
        self.files = FilesApi(files, config.files)
        self.registry.files = self.files
        batches = BatchStore(self.store)
        runner = BatchRunner(
            batches,
            files,
            concurrency=config.batches.batch_concurrency,
            max_owner_bytes=config.files.max_tenant_upload_bytes,
            interactive=lambda seconds: self.policy.interactive_within(seconds),
            arriving=lambda seconds: self.policy.interactive_arriving(seconds),
        )
        self.batches = BatchesApi(batches, files, runner)
        self.lora = RuntimeLora(self.registry, config.allow_runtime_lora)
        self.admin = ModelAdmin(
            self.registry,
            config.models,
            # (load_model looked up at each load: tests hold it)
            load=lambda spec: load_model(with_tenants(spec, config), metrics.GenerationMeter),
            started=self._serve_model,
            changed=self._states_changed,
            calls_using=self._calls_using,
            # Models not declared at start only with admin keys: otherwise any caller could make it read any path.
            declare=(lambda name, source, settings: runtime_model(name, source, settings, config))
            if config.admin_keys
            else None,
            admission=lambda name: self.keeper.admission(name),
            prepare=lambda spec: prepared(spec, config.model_cache),
        )
        #: Loads on request, idle unloads and the budget of loaded models.
        self.keeper = ModelKeeper(self.admin, self.registry, self._calls_using, config.residency)
        self._idle_unloads: asyncio.Task[None] | None = None
        #: ReloadConfig and SIGHUP: the composition root gives it the command line the server started from.
        self.reloader = ConfigReload(self.admin, self.registry, config, ready=lambda: self.registry.ready)
        #: How batch lines run (the composition root's: the REST bridge's translation over gRPC to this server);
        #: set after start(), the runner starts once the models are loaded. None: batches wait.
        self.batch_lines: LineExecutor | None = None
        self.responses = ResponsesApi(self.registry, self.store, self.limit, self.conversations, config.mcp)
        self.stored_chat = StoredChatCompletions(ChatCompletionStore(self.store))
        self.port = 0
        self._expiry: asyncio.Task[None] | None = None
        self._engines_down: set[str] = set()  # models whose engine is being replaced
        self._health_updates: set[asyncio.Task[None]] = set()
        self._health_names: set[str] = set()  # the names health was last set for
        self._stopping = False
        self._loading: str | None = "the models load next"  # what load_models does, until every model is served
        file_keys = config_keys(config.api_key_file) if config.api_key_file else []
        self._static_keys = [key for key in config.api_keys if key not in file_keys]  # TOML and --api-key
        self.local_socket: str | None = None  # a unix socket for the bridge in this process (under TLS)
        self.metrics_endpoint: MetricsEndpoint | None = None  # --metrics-port's

    def _calls_using(self, names: Iterable[str]) -> int:
        """API calls under way naming one of the models ``names``, and background responses going on them: an
        unload drains them, and a model they use is not idle."""
        names = set(names)
        return self.policy.calls_using(names) + self.responses.background_using(names)

    def _connection_age_options(self) -> list[tuple[str, int]]:
        """GOAWAY after --max-connection-age-seconds; no grace limit, because a generation may stream for minutes
        and the client opens its next calls on a new connection anyway."""
        age = self.config.max_connection_age_seconds
        return [] if age is None else [("grpc.max_connection_age_ms", max(1, round(age * 1000)))]

    async def start(self) -> int:
        """Bind and start answering (health NOT_SERVING until the models load); return the port."""
        # Built here, not in __init__: grpc.aio objects belong to the loop that creates them.
        self.health = health.aio.HealthServicer()
        self.policy = CallPolicyInterceptor(
            self.config.api_keys, self.limit, served=lambda: self.registry.names, admin_keys=self.config.admin_keys
        )
        if self.config.api_key_file is not None:
            self.policy.set_policies(key_file_policies(self.config.api_key_file))
        self.policy.on_interactive = self.batches.runner.give_way
        self.policy.model_ready, self.policy.model_used = self.keeper.ready, self.keeper.finished
        self._server = grpc.aio.server(
            interceptors=[self.policy],
            options=[
                *MESSAGE_SIZE_OPTIONS,
                # grpc.aio sets SO_REUSEPORT by default: a second server on a taken port would bind
                # silently and share its traffic. Off, binding a taken port fails.
                ("grpc.so_reuseport", 0),
                *self._connection_age_options(),
            ],
        )
        for add_to_server, servicer in SERVED.values():
            add_to_server(servicer(self), self._server)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self._server)
        enable_server_reflection([*SERVED, health.SERVICE_NAME], self._server)
        await self._set_health(health_pb2.HealthCheckResponse.NOT_SERVING)
        address = f"{self.config.host}:{self.config.port}"
        if self._credentials is None:
            self.port = self._server.add_insecure_port(address)
        else:
            self.port = self._server.add_secure_port(address, self._credentials)
        if self.local_socket is not None:  # owner-only, in a private directory: no key to the TLS port
            self._server.add_insecure_port(f"unix:{self.local_socket}")
        await self._server.start()
        log.info("gRPC listening on %s:%d%s", self.config.host, self.port, " (TLS)" if self._credentials else "")
        if self.config.metrics_port is not None:
            self.metrics_endpoint = MetricsEndpoint(self.config.host, self.config.metrics_port, self.metrics_exposition)
            self.metrics_endpoint.start()
        return self.port

    async def metrics_exposition(self) -> tuple[bytes, str]:
        """This process's Prometheus metrics (the engines' and the store's figures fetched now), content type."""
        await metrics.refresh(self.registry, self.store)
        return metrics.exposition(), metrics.CONTENT_TYPE

    def on_hangup(self) -> None:
        """SIGHUP: read the key files again and, when the server was started with --config, reload it (in the
        background; its outcome is logged)."""
        self.reload_api_keys()
        self.reload_admin_keys()
        self.reloader.reload_in_background()

    def reload_admin_keys(self) -> None:
        """Read --admin-key-file again: its keys replace the admin keys read before (an emptied or unreadable
        file keeps them: a server that required admin keys must not open its loads to every key)."""
        path = None if self.reloader.arguments is None else getattr(self.reloader.arguments, "admin_key_file", None)
        if path is None:
            return
        try:
            fresh = config_keys(path)
        except OSError as error:
            log.error("admin keys not reloaded: %s; the previous keys stay", error)
            return
        if not fresh:
            log.error("admin keys not reloaded: %s holds no key; the previous keys stay", path)
            return
        self.policy.set_admin_keys(fresh)
        log.info("admin keys reloaded from %s: %d keys", path, len(fresh))

    def reload_api_keys(self) -> None:
        """Read --api-key-file again (on SIGHUP): its keys replace the ones read before; other keys stay."""
        if self.config.api_key_file is None:
            return
        try:
            policies = key_file_policies(self.config.api_key_file)
        except (OSError, ConfigError) as error:
            log.error("API keys not reloaded: %s; the previous keys stay", error)
            return
        fresh = list(policies)
        if not self._static_keys and not fresh:  # an emptied file must not open a server that required keys
            log.error("API keys not reloaded: %s holds no key; the previous keys stay", self.config.api_key_file)
            return
        keys = [*self._static_keys, *fresh]
        self.policy.set_keys(keys)
        self.policy.set_policies(policies)  # limits, models and scopes; each key keeps what it used
        log.info("API keys reloaded from %s: %d keys", self.config.api_key_file, len(keys))

    async def loads(self) -> dict[str, Any]:
        """This server's load in SGLang's /v1/loads shape (smg's load-aware routing reads it)."""
        return await metrics.loads(self.registry, self.limit.in_use, self.limit.limit)

    async def load_models(self) -> None:
        """Load every configured model but those loaded on request (off the event loop), start its process, then
        report SERVING."""
        at_start = [spec for spec in self.config.models if not spec.load_on_request]
        for number, spec in enumerate(at_start, 1):
            self._loading = f"loading model {spec.name!r} ({number} of {len(at_start)})"
            await self.admin.load(spec.name)  # off the event loop; an EngineError ends the server
        self.registry.mark_ready()
        failed = await self.responses.recover()
        if failed:
            log.warning("%d stored responses were unfinished at the last stop; marked failed", failed)
        if self.batch_lines is not None:
            await self.batches.runner.start(self.batch_lines)  # unfinished batches resume
        self._expiry = asyncio.create_task(self._expire())
        self._idle_unloads = asyncio.create_task(self.keeper.run())
        self._loading = None
        frozen = freeze_startup_heap()  # before SERVING: no request waits on it
        share_the_gil_sooner()  # the event loop waits less for the GIL (clients/gil.py)
        log.debug("%d startup objects frozen", frozen)
        await self._set_health(health_pb2.HealthCheckResponse.SERVING)
        log.info("serving %s", ", ".join(self.registry.names))

    def _serve_model(self, model: Model) -> None:
        """A model just loaded serves: its process's messages reach the loop, and its health follows it."""
        model.worker.start()
        model.worker.watch(functools.partial(self._engine_changed, model.name))
        self._engines_down.discard(model.name)  # (a process of an earlier load of it may have been down)

    def _states_changed(self) -> None:
        """A model was loaded or unloaded at run time: every health name follows."""
        self._follow_health()

    def _loads_on_request(self) -> bool:
        """Whether a request may load a model now (autoload on, and a known model neither loaded nor failed): the
        server serves although no model is loaded."""
        states = self.registry.states
        return self.config.residency.autoload and any(
            status is not None and status.state not in (ModelState.LOADED, ModelState.FAILED)
            for status in map(states.get, states.names)
        )

    def not_serving_reason(self) -> str:
        """Why health is not SERVING, for a person reading /health: which model is loading, shutting down, or why
        the models being replaced failed their last load ("" once serving)."""
        if self._stopping:
            return "shutting down"
        failures = [model.worker.load_failure for model in self.registry if model.worker.load_failure]
        return self._loading or "; ".join(failures)

    async def stop(self) -> None:
        """NOT_SERVING, let in-flight API calls finish within the grace period, then stop the engines.

        New calls are refused at once. Open health Watch streams do not hold the exit: once the last
        API call has ended (or the grace period is over) whatever is still open is cancelled.
        """
        self._stopping = True
        # Batch lines stop first, unrecorded: they run again at the next start, rather than be recorded as
        # failed by the shutdown.
        await self.batches.runner.close()
        await self._set_health(health_pb2.HealthCheckResponse.NOT_SERVING)
        # gRPC's own grace outlasts ours by ENDING_SECONDS: what still runs at our deadline is ended by us,
        # with a status that says why, before grpc.aio would cancel it ("Cancelling all calls").
        graceful = asyncio.create_task(self._server.stop(self.config.grace_seconds + ENDING_SECONDS))
        deadline = time.monotonic() + self.config.grace_seconds
        await asyncio.sleep(min(WATCHERS_NOTICE_SECONDS, self.config.grace_seconds))  # watchers hear NOT_SERVING
        await self._wait_for_calls(deadline, graceful)
        if self.policy.in_flight:
            log.warning("%d calls still running after the grace period: ending them", self.policy.in_flight)
            self.registry.end_requests("the server is shutting down; retry shortly")
            await self._wait_for_calls(time.monotonic() + ENDING_SECONDS, graceful)
        await self._server.stop(0)  # cancels what is left open: health watches, reflection streams
        await graceful
        if self.metrics_endpoint is not None:
            await self.metrics_endpoint.stop()
        for task in (self._expiry, self._idle_unloads):
            if task is not None:
                task.cancel()
        await self.responses.close()
        if self.batch_lines is not None:
            await self.batch_lines.close()
        self.admin.close()  # models being unloaded, out of the registry
        self.registry.close()
        self.store.close()

    async def _wait_for_calls(self, deadline: float, graceful: asyncio.Task[None]) -> None:
        """Until no API call runs, or ``deadline``."""
        while self.policy.in_flight and time.monotonic() < deadline and not graceful.done():
            await asyncio.sleep(STOP_POLL_SECONDS)

    async def _expire(self) -> None:
        """Delete expired files and abandoned uploads, and responses older than --response-max-age if set."""
        while True:
            if removed := await self.store.expire():
                log.info("expired %d stored responses", removed)
            if removed := await self.files.expire():
                log.info("deleted %d expired files or abandoned uploads", removed)
            await asyncio.sleep(EXPIRY_INTERVAL_SECONDS)

    async def _set_health(self, status: int) -> None:
        """The server's health (""), each service's (NOT_SERVING too while every model it answers with is down)
        and each model's (NOT_SERVING too while its process is replaced)."""
        not_serving = health_pb2.HealthCheckResponse.NOT_SERVING
        kinds = self.registry.kinds()
        not_loaded = [name for name in self.registry.states.names if name not in kinds]  # known, no process
        stopped = {*services_down(kinds, self._engines_down), *self._engines_down, *not_loaded}
        names = {"", *SERVED, *kinds, *not_loaded}
        for name in names:
            await self.health.set(name, not_serving if name in stopped else status)
        for name in self._health_names - names:  # a model a configuration reload removed: not known any more
            await self.health.set(name, health_pb2.HealthCheckResponse.SERVICE_UNKNOWN)
        self._health_names = names

    def _engine_changed(self, name: str, up: bool) -> None:
        """A model's process (an engine, a pipeline) went down or came back: that model's health follows it; the
        server's says SERVING while any model can serve (a pipeline restarting does not stop the chat models)."""
        (self._engines_down.discard if up else self._engines_down.add)(name)
        self._follow_health()

    def _follow_health(self) -> None:
        """Health names follow the models' processes and states now (SERVING while any loaded model can serve)."""
        if self._stopping or not self.registry.ready:  # load_models / stop set the health themselves
            return
        serving = bool(set(self.registry.names) - self._engines_down) or self._loads_on_request()
        status = health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
        task = asyncio.get_running_loop().create_task(self._set_health(status))
        self._health_updates.add(task)
        task.add_done_callback(self._health_updates.discard)


EXPIRY_INTERVAL_SECONDS = 600.0  # how often expired files and responses past --response-max-age are deleted
STOP_POLL_SECONDS = 0.05  # how often a stopping server looks whether its API calls have ended
WATCHERS_NOTICE_SECONDS = 0.2  # time for health watchers to receive NOT_SERVING before their streams close
ENDING_SECONDS = 1.0  # time for calls still running at the end of the grace period to end with UNAVAILABLE


def with_tenants(spec: ModelSpec, config: ServeConfig) -> ModelSpec:
    """``spec`` as this server loads it: with API keys, its engine keeps the keys' prompts apart in its prefix
    cache (ovserve.service.engine.salting)."""
    keyed = bool(config.api_keys or config.api_key_file)
    return dataclasses.replace(spec, settings=dataclasses.replace(spec.settings, tenants=keyed))
