"""The gRPC server: servicers, health checking and reflection around the served models."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from clients.defaults import MESSAGE_SIZE_OPTIONS
from clients.v1 import (
    chat_pb2,
    chat_pb2_grpc,
    completion_pb2,
    completion_pb2_grpc,
    model_pb2,
    model_pb2_grpc,
    response_pb2,
    response_pb2_grpc,
)
from service.config import ServeConfig
from service.interceptors import CallPolicyInterceptor
from service.models import ModelRegistry, ServedModel
from service.responses.api import ResponsesApi
from service.responses.store import ResponseStore
from service.servicers import ChatServicer, CompletionServicer, ModelServicer, ResponseServicer

log = logging.getLogger(__name__)


class Server:
    """A running ovserve gRPC server: start, load models, stop."""

    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.registry = ModelRegistry()
        self.store = ResponseStore(config.response_store, max_age_seconds=config.response_max_age_seconds)
        self.responses = ResponsesApi(self.registry, self.store)
        self.port = 0
        self._expiry: asyncio.Task[None] | None = None

    async def start(self) -> int:
        """Bind and start answering (health NOT_SERVING until the models load); return the port."""
        # Built here, not in __init__: grpc.aio objects belong to the loop that creates them.
        self.health = health.aio.HealthServicer()
        self.policy = CallPolicyInterceptor(self.config.api_keys, self.config.max_concurrent_requests)
        self._server = grpc.aio.server(
            interceptors=[self.policy],
            options=list(MESSAGE_SIZE_OPTIONS),
        )
        for add_to_server, servicer in SERVED.values():
            add_to_server(servicer(self), self._server)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self._server)
        reflection.enable_server_reflection([*SERVED, health.SERVICE_NAME, reflection.SERVICE_NAME], self._server)
        await self._set_health(health_pb2.HealthCheckResponse.NOT_SERVING)
        self.port = self._server.add_insecure_port(f"{self.config.host}:{self.config.port}")
        await self._server.start()
        log.info("gRPC listening on %s:%d", self.config.host, self.port)
        return self.port

    async def load_models(self) -> None:
        """Load every configured model (off the event loop), start its engine, then report SERVING."""
        loop = asyncio.get_running_loop()
        for spec in self.config.models:
            model = await loop.run_in_executor(None, ServedModel.load, spec)
            model.engine.start()
            self.registry.add(model)
        self.registry.mark_ready()
        failed = await self.responses.recover()
        if failed:
            log.warning("%d stored responses were unfinished at the last stop; marked failed", failed)
        if self.config.response_max_age_seconds:
            self._expiry = asyncio.create_task(self._expire_responses())
        await self._set_health(health_pb2.HealthCheckResponse.SERVING)
        log.info("serving %s", ", ".join(model.name for model in self.registry))

    async def stop(self) -> None:
        """NOT_SERVING, let in-flight RPCs finish within the grace period, then stop the engines."""
        await self._set_health(health_pb2.HealthCheckResponse.NOT_SERVING)
        await self._server.stop(self.config.grace_seconds)
        if self._expiry is not None:
            self._expiry.cancel()
        await self.responses.close()
        self.registry.close()
        self.store.close()

    async def _expire_responses(self) -> None:
        while True:
            removed = await self.store.expire()
            if removed:
                log.info("expired %d stored responses", removed)
            await asyncio.sleep(EXPIRY_INTERVAL_SECONDS)

    async def _set_health(self, status: int) -> None:
        for name in ("", *SERVED):
            await self.health.set(name, status)


# The services this server implements, by full name (health and reflection list them):
# how to register each, and how to build its servicer from the server.
SERVED: dict[str, tuple[Callable[[Any, grpc.aio.Server], None], Callable[[Server], Any]]] = {
    completion_pb2.DESCRIPTOR.services_by_name["CompletionService"].full_name: (
        completion_pb2_grpc.add_CompletionServiceServicer_to_server, lambda s: CompletionServicer(s.registry)
    ),
    chat_pb2.DESCRIPTOR.services_by_name["ChatService"].full_name: (
        chat_pb2_grpc.add_ChatServiceServicer_to_server, lambda s: ChatServicer(s.registry)
    ),
    response_pb2.DESCRIPTOR.services_by_name["ResponseService"].full_name: (
        response_pb2_grpc.add_ResponseServiceServicer_to_server, lambda s: ResponseServicer(s.responses)
    ),
    model_pb2.DESCRIPTOR.services_by_name["ModelService"].full_name: (
        model_pb2_grpc.add_ModelServiceServicer_to_server, lambda s: ModelServicer(s.registry)
    ),
}  # fmt: skip
EXPIRY_INTERVAL_SECONDS = 600.0  # how often stored responses past --response-max-age are deleted
