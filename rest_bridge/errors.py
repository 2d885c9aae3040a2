"""OpenAI error envelopes: gRPC status -> HTTP status and error type, and the bridge's own refusals.

Every error the bridge returns is OpenAI's envelope
``{"error": {"message", "type", "param", "code"}}`` with ``code`` a string or
null. ``param`` names the offending request field in OpenAI's terms: the
service reports proto paths (``stop_sequences[1]``, ``prompts[0]``), which the
bridge maps back to the name the client sent (``stop``, ``prompt``) with
``ovserve.clients.polymorphic``, the table that also drives the way in.
"""

from __future__ import annotations

from typing import Any

import grpc
import tornado.web

from ovserve.clients.errors import error_details
from ovserve.clients.polymorphic import openai_param, openai_text

INVALID_REQUEST = "invalid_request_error"

# gRPC status -> (HTTP status, OpenAI error type): the HTTP status google/rpc/code.proto gives each code (499
# for CANCELLED, nginx's "client closed request"), and the error type OpenAI's API returns with that status.
STATUS_TABLE: dict[grpc.StatusCode, tuple[int, str]] = {
    grpc.StatusCode.INVALID_ARGUMENT: (400, INVALID_REQUEST),
    grpc.StatusCode.FAILED_PRECONDITION: (400, INVALID_REQUEST),
    grpc.StatusCode.OUT_OF_RANGE: (400, INVALID_REQUEST),
    grpc.StatusCode.UNAUTHENTICATED: (401, "authentication_error"),
    grpc.StatusCode.PERMISSION_DENIED: (403, "permission_error"),
    grpc.StatusCode.NOT_FOUND: (404, INVALID_REQUEST),  # OpenAI's type for an unknown model
    grpc.StatusCode.ALREADY_EXISTS: (409, "conflict_error"),
    grpc.StatusCode.ABORTED: (409, "conflict_error"),
    grpc.StatusCode.RESOURCE_EXHAUSTED: (429, "rate_limit_error"),
    grpc.StatusCode.CANCELLED: (499, "request_cancelled"),
    grpc.StatusCode.INTERNAL: (500, "server_error"),
    grpc.StatusCode.UNKNOWN: (500, "server_error"),
    grpc.StatusCode.DATA_LOSS: (500, "server_error"),
    grpc.StatusCode.UNIMPLEMENTED: (501, "not_implemented_error"),
    grpc.StatusCode.UNAVAILABLE: (503, "service_unavailable_error"),
    grpc.StatusCode.DEADLINE_EXCEEDED: (504, "timeout_error"),
}

# (gRPC status, the field it names, or None for any) -> (HTTP status, OpenAI's error code), where OpenAI
# answers with a code of its own: an unknown model; an unknown previous response, which OpenAI calls a bad
# request (400) rather than a missing resource; a rate limit.
ERROR_CODES: dict[tuple[grpc.StatusCode, str | None], tuple[int, str]] = {
    (grpc.StatusCode.NOT_FOUND, "model"): (404, "model_not_found"),
    (grpc.StatusCode.NOT_FOUND, "previous_response_id"): (400, "previous_response_not_found"),
    (grpc.StatusCode.RESOURCE_EXHAUSTED, None): (429, "rate_limit_exceeded"),
}

RATE_LIMIT_PREFIX = "x-ratelimit-"  # OpenAI's rate-limit headers, sent by the service as initial metadata
# HTTP reason phrases tornado does not know (nginx's 499).
REASONS = {499: "Client Closed Request"}


class BridgeError(tornado.web.HTTPError):
    """An error answered with OpenAI's envelope; tornado takes the HTTP status from it."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = INVALID_REQUEST,  # OpenAI's field name
        param: str | None = None,
        code: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(status, reason=REASONS.get(status))
        self.message = message
        self.type = type
        self.param = param
        self.code = code
        self.retry_after = retry_after  # seconds, from the service's google.rpc.RetryInfo
        self.headers: list[tuple[str, str]] = []  # sent with the error (an API key's x-ratelimit-* figures)

    def envelope(self) -> dict[str, Any]:
        """OpenAI's error body."""
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}

    def __str__(self) -> str:
        return f"HTTP {self.status_code}: {self.message}"


def from_rpc_error(error: grpc.aio.AioRpcError | grpc.RpcError) -> BridgeError:
    """The OpenAI error for a failed gRPC call, ``param`` from its google.rpc details."""
    code = error.code()
    status, error_type = STATUS_TABLE.get(code, (500, "server_error"))
    details = error_details(error)
    field = details.first_field
    message = openai_text(error.details() or code.name.lower())
    status, error_code = ERROR_CODES.get((code, field), ERROR_CODES.get((code, None), (status, None)))
    failure = BridgeError(
        status, message, type=error_type, param=openai_param(field), code=error_code, retry_after=details.retry_after
    )
    failure.headers = rate_limit_headers(_initial_metadata(error))
    return failure


def rate_limit_headers(metadata: Any) -> list[tuple[str, str]]:
    """The x-ratelimit-* entries of a call's initial metadata (the service's figures for the caller's API key),
    which the bridge sends on as OpenAI's headers of the same names."""
    return [(str(key), str(value)) for key, value in metadata or () if str(key).startswith(RATE_LIMIT_PREFIX)]


def _initial_metadata(error: grpc.aio.AioRpcError | grpc.RpcError) -> Any:
    reader = getattr(error, "initial_metadata", None)
    return reader() if callable(reader) else ()
