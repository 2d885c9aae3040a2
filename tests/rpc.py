"""Test helpers for gRPC calls: build requests from OpenAI JSON, read rich error statuses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message

from ovserve.clients.errors import error_details
from ovserve.service.errors import ServiceError, to_rpc_status

M = TypeVar("M", bound=Message)


def parse(message_class: type[M], body: dict[str, Any]) -> M:
    """The request message for an OpenAI-style JSON body (as grpcurl would send it)."""
    return json_format.ParseDict(body, message_class())


@dataclass(frozen=True)
class Failure:
    """What a failed RPC said: its code, message, BadRequest fields and ErrorInfo param."""

    code: grpc.StatusCode
    message: str
    fields: list[str]
    param: str | None


def failure(error: grpc.RpcError) -> Failure:
    """Decode the google.rpc details of a failed call (through the clients' decoder, the one ovserve ships)."""
    details = error_details(error)
    return Failure(error.code(), error.details() or "", [name for name, _ in details.fields], details.param)


class ServiceRpcError(grpc.RpcError):
    """A failed call as a client sees it when the server raised ``error`` (encoded by the server's own code)."""

    def __init__(self, error: ServiceError) -> None:
        self.status = to_rpc_status(error)

    def code(self) -> grpc.StatusCode:
        return self.status.code

    def details(self) -> str:
        return self.status.details

    def trailing_metadata(self) -> tuple[tuple[str, bytes], ...]:
        return tuple(self.status.trailing_metadata)
