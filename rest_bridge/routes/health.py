"""GET /health (for load balancers), and beside ``ovserve serve`` GET /metrics and /v1/loads (the server's own).

These are not under the API prefixes but at the root (/health, /metrics), or under each prefix (/loads).
"""

from __future__ import annotations

from typing import Any, Protocol

import grpc
import tornado.web
from grpc_health.v1 import health_pb2

from ovserve.rest_bridge.handler import BridgeHandler
from ovserve.rest_bridge.json_body import encode_json


class HealthHandler(BridgeHandler):
    """GET /health: 200 when the gRPC service reports SERVING, else 503 (for load balancers); beside the
    server, a 503 also says why (``reason``: which model is loading, shutting down)."""

    def initialize(self, figures: ServerFigures | None = None, **arguments: Any) -> None:  # type: ignore[override]
        super().initialize(**arguments)
        self._figures = figures

    async def get(self) -> None:
        try:
            reply = await self.backend.health.Check(
                health_pb2.HealthCheckRequest(service=""),
                timeout=self.settings_.health_timeout_seconds,
                metadata=self.metadata(),
            )
            status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
        except grpc.aio.AioRpcError as error:
            status = f"UNREACHABLE ({error.code().name})"
        serving = status == "SERVING"
        body = {"status": status}
        if not serving and self._figures is not None and (reason := self._figures.not_serving_reason()):
            body["reason"] = reason
        self.write_json(body, 200 if serving else 503)


class ServerFigures(Protocol):
    """What ``ovserve serve`` lets the bridge beside it show of the server: only that process knows them."""

    async def metrics_exposition(self) -> tuple[bytes, str]:
        """The Prometheus exposition and its content type."""
        ...

    async def loads(self) -> dict[str, Any]:
        """The load in SGLang's /v1/loads shape."""
        ...

    def not_serving_reason(self) -> str:
        """Why the server is not SERVING ("" if it is, or cannot say)."""
        ...


@tornado.web.stream_request_body
class MetricsHandler(tornado.web.RequestHandler):
    """GET /metrics: the Prometheus metrics of the process that serves the models (only beside it)."""

    def initialize(self, figures: ServerFigures) -> None:  # type: ignore[override]
        self._figures = figures

    def data_received(self, chunk: bytes) -> None:
        """A body sent here (none is taken) is dropped as it arrives, not buffered whole before the 405."""

    async def get(self) -> None:
        body, content_type = await self._figures.metrics_exposition()
        self.set_header("Content-Type", content_type)
        self.finish(body)


class LoadsHandler(MetricsHandler):
    """GET /v1/loads (and /v3/loads): running and waiting requests and KV use, as smg's load-aware policies
    read them (``?include=`` is accepted: every section this server has is always there)."""

    async def get(self) -> None:
        self.set_header("Content-Type", "application/json")
        self.finish(encode_json(await self._figures.loads()))


def rules(
    prefixes: tuple[str, ...], arguments: dict[str, Any], figures: ServerFigures | None
) -> list[tuple[str, type[tornado.web.RequestHandler], dict[str, Any]]]:
    """/health, and with ``figures`` /metrics and {prefix}/loads."""
    found: list[tuple[str, type[tornado.web.RequestHandler], dict[str, Any]]] = [
        ("/health", HealthHandler, {**arguments, "figures": figures})
    ]
    if figures is not None:
        found.append(("/metrics", MetricsHandler, {"figures": figures}))
        found += [(prefix + "/loads", LoadsHandler, {"figures": figures}) for prefix in prefixes]
    return found
