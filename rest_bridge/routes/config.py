"""POST /v3/config/reload (ModelService.ReloadConfig: what happened to each model) and OVMS's POST /v1/config/reload
(the same reload, answered in OVMS's shape): the server reads its TOML file again; an admin key's call once the
server has keys."""

from __future__ import annotations

import math
from typing import Any

from ovserve.clients.v1 import model_pb2
from ovserve.rest_bridge.errors import BridgeError
from ovserve.rest_bridge.handler import RETRIABLE
from ovserve.rest_bridge.json_body import encode_json
from ovserve.rest_bridge.routes.models import AdminBodyHandler
from ovserve.rest_bridge.translate.message import message_from_body


def reload_request(body: dict[str, Any]) -> model_pb2.ReloadConfigRequest:
    """The reload takes no parameters: an empty body or ``{}`` (another key is a 400 naming it)."""
    return message_from_body(body, model_pb2.ReloadConfigRequest, allowed=set())


def reload_reply(reply: model_pb2.ReloadConfigResponse) -> dict[str, Any]:
    """ovserve's reply: each model's change (added, removed, changed, unchanged, kept), its state now (null once
    removed) and why applying it failed (null: it did not), and the server settings that need a restart."""
    return {
        "models": [
            {"model": item.model, "change": item.change, "state": item.state or None, "error": item.error or None}
            for item in reply.models
        ],
        "restart_required": list(reply.restart_required),
    }


# ovserve's model state -> OVMS's ModelVersionState (a model that does not serve, removed ones included, is END).
OVMS_STATES = {"loaded": "AVAILABLE", "loading": "LOADING", "unloading": "UNLOADING"}
# What changes the served models: OVMS answers 201 when the reload changed something, 200 when nothing needed it.
APPLIED_CHANGES = frozenset({"added", "removed", "changed"})


def ovms_reply(reply: model_pb2.ReloadConfigResponse) -> tuple[dict[str, Any], int]:
    """OVMS's reply (its GetModelStatus of every model, by name; one version, "1") and its status code."""
    body = {
        item.model: {
            "model_version_status": [
                {
                    "version": "1",
                    "state": OVMS_STATES.get(item.state, "END"),
                    "status": {
                        "error_code": "UNKNOWN" if item.error else "OK",
                        "error_message": item.error or "OK",
                    },
                }
            ]
        }
        for item in reply.models
    }
    return body, 201 if any(item.change in APPLIED_CHANGES for item in reply.models) else 200


class ReloadHandler(AdminBodyHandler):
    """POST /v3/config/reload: what the reload did to each model, once it is done."""

    async def post(self) -> None:
        request = await self.optional(reload_request)
        self.write_json(reload_reply(await self.unary(self.backend.models.ReloadConfig, request)))


class OvmsReloadHandler(AdminBodyHandler):
    """OVMS's POST /v1/config/reload: each model's status in OVMS's shape, 201 when something changed, 200 when
    nothing did; an error is OVMS's ``{"error": message}`` with the same status as on /v3."""

    async def post(self) -> None:
        request = await self.optional(reload_request)
        body, status = ovms_reply(await self.unary(self.backend.models.ReloadConfig, request))
        self.write_json(body, status)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        error = kwargs.get("exc_info", (None, None, None))[1]
        if not isinstance(error, BridgeError):  # tornado's own and unexpected errors: the envelope's message
            super().write_error(status_code, **kwargs)
            return
        if status_code in RETRIABLE:
            self.set_header("Retry-After", str(max(1, math.ceil(error.retry_after or 1))))
        self.set_header("Content-Type", "application/json")
        self.finish(encode_json({"error": error.message}))


# Full paths (not under both prefixes): /v1's is OVMS's shape, /v3's ovserve's.
RULES = [
    ("/v3/config/reload", ReloadHandler),
    ("/v1/config/reload", OvmsReloadHandler),
]
