"""What a failed ovserve call says, decoded from its google.rpc status details.

The clients let ``grpc.RpcError`` (``grpc.aio.AioRpcError`` for the asyncio
client) propagate; these helpers read the rich status the server attaches:
``google.rpc.BadRequest`` names each bad field, ``google.rpc.ErrorInfo``
carries the OpenAI ``param``. Both error kinds keep the status in their
trailing metadata, so one decoder serves both. It is the only decoder of
those details in ovserve: the REST bridge and the tests read errors through it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import grpc
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status


def _status(error: grpc.RpcError) -> status_pb2.Status | None:
    try:
        return rpc_status.from_call(error)  # type: ignore[arg-type]
    except (AttributeError, ValueError, TypeError):  # not a call error, or details inconsistent with the status
        return None


@dataclass(frozen=True)
class ErrorDetails:
    """The google.rpc details of a failed call that ovserve sends."""

    fields: list[tuple[str, str]] = field(default_factory=list)  # BadRequest: (field path, description), in order
    param: str | None = None  # ErrorInfo metadata "param": the one field the error is about
    retry_after: float | None = None  # RetryInfo: seconds to wait before trying again

    @property
    def first_field(self) -> str | None:
        """The field the error names first: the first field violation, else the ErrorInfo param."""
        return self.fields[0][0] if self.fields else self.param


def error_details(error: grpc.RpcError) -> ErrorDetails:
    """Decode the BadRequest and ErrorInfo details of ``error``; empty when it carries none (or unreadable ones)."""
    status = _status(error)
    fields: list[tuple[str, str]] = []
    param = retry_after = None
    for detail in status.details if status else []:
        bad_request = error_details_pb2.BadRequest()
        info = error_details_pb2.ErrorInfo()
        retry = error_details_pb2.RetryInfo()
        if detail.Unpack(bad_request):
            fields += [(violation.field, violation.description) for violation in bad_request.field_violations]
        elif detail.Unpack(info) and param is None:
            param = info.metadata.get("param") or None
        elif detail.Unpack(retry):
            retry_after = retry.retry_delay.ToTimedelta().total_seconds()
    return ErrorDetails(fields, param, retry_after)


def field_violations(error: grpc.RpcError) -> list[tuple[str, str]]:
    """The ``(field, description)`` pairs of the error's google.rpc.BadRequest; empty when it has none."""
    return error_details(error).fields


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
        details = error_details(error)
        code: grpc.StatusCode = error.code()  # type: ignore[attr-defined]
        return cls(code, error.details() or "", details.fields, details.param)  # type: ignore[attr-defined]
