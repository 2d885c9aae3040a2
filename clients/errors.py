"""What a failed ovserve call says, decoded from its google.rpc status details.

The clients let ``grpc.RpcError`` (``grpc.aio.AioRpcError`` for the asyncio
client) propagate; these helpers read the rich status the server attaches:
``google.rpc.BadRequest`` names each bad field, ``google.rpc.ErrorInfo``
carries the OpenAI ``param``. Both error kinds keep the status in their
trailing metadata, so one decoder serves both.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import grpc
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status


def _status(error: grpc.RpcError) -> status_pb2.Status | None:
    try:
        return rpc_status.from_call(error)  # type: ignore[arg-type]
    except (AttributeError, ValueError):  # not a call error, or details inconsistent with the status
        return None


def field_violations(error: grpc.RpcError) -> list[tuple[str, str]]:
    """The ``(field, description)`` pairs of the error's google.rpc.BadRequest; empty when it has none."""
    status = _status(error)
    violations: list[tuple[str, str]] = []
    for detail in status.details if status else []:
        bad_request = error_details_pb2.BadRequest()
        if detail.Unpack(bad_request):
            violations += [(violation.field, violation.description) for violation in bad_request.field_violations]
    return violations


@dataclass
class OvserveError(Exception):
    """A failed call in plain terms: status code, message, the fields named, and OpenAI's ``param``.

    The clients raise ``grpc.RpcError``; build this from one when plain
    attributes are handier: ``raise OvserveError.from_rpc_error(error) from error``.
    """

    code: grpc.StatusCode
    message: str
    fields: list[tuple[str, str]] = field(default_factory=list)
    param: str | None = None

    def __str__(self) -> str:
        return f"{self.code.name}: {self.message}"

    @classmethod
    def from_rpc_error(cls, error: grpc.RpcError) -> OvserveError:
        """Decode a ``grpc.RpcError`` or ``grpc.aio.AioRpcError``."""
        param = None
        status = _status(error)
        for detail in status.details if status else []:
            info = error_details_pb2.ErrorInfo()
            if detail.Unpack(info):
                param = info.metadata.get("param")
        code: grpc.StatusCode = error.code()  # type: ignore[attr-defined]
        return cls(code, error.details() or "", field_violations(error), param)  # type: ignore[attr-defined]
