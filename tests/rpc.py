"""Test helpers for gRPC calls: build requests from OpenAI JSON, read rich error statuses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc import error_details_pb2
from grpc_status import rpc_status

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
    """Decode the google.rpc details of a failed call."""
    status = rpc_status.from_call(error)
    fields: list[str] = []
    param = None
    for detail in status.details if status else []:
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad_request = error_details_pb2.BadRequest()
            detail.Unpack(bad_request)
            fields += [violation.field for violation in bad_request.field_violations]
        elif detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            param = info.metadata.get("param")
    return Failure(error.code(), error.details() or "", fields, param)
