"""Errors the service raises, and how each becomes a gRPC status with google.rpc details.

API code raises these; the servicers turn them into a rich status (see
``to_rpc_status``), so every refusal names its field in a
``google.rpc.BadRequest`` (or ``ErrorInfo`` metadata ``param``) and the REST
bridge can fill OpenAI's ``param``.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

ERROR_DOMAIN = "ovserve"
# Status details travel in gRPC trailers, which clients refuse past 8-16 KiB:
# an error's details list at most MAX_VIOLATIONS, its message the first
# MAX_VIOLATIONS_IN_MESSAGE, and client values are quoted at most MAX_QUOTED long.
MAX_VIOLATIONS = 20
MAX_VIOLATIONS_IN_MESSAGE = 3
MAX_QUOTED = 64
# Whatever the messages say (a chat template's error, say), the status message and the violations'
# descriptions together stay within these many characters: base64-encoded details plus the
# percent-encoded message then fit the 8 KiB a client's metadata budget allows, so a client error is
# never turned into RESOURCE_EXHAUSTED ("received metadata size exceeds soft limit") on the way.
MAX_MESSAGE_CHARS = 600
MAX_DESCRIPTIONS_CHARS = 2000
# What UNAVAILABLE and RESOURCE_EXHAUSTED tell a client to wait before retrying (google.rpc.RetryInfo;
# the bridge turns it into Retry-After): an engine restarts, a place frees, in about this long.
RETRY_AFTER_SECONDS = 1.0


def shortened(text: str, limit: int) -> str:
    """``text``, cut to ``limit`` characters (an ellipsis marks the cut)."""
    return text if len(text) <= limit else text[: max(0, limit - 3)] + "..."


def quote(value: object) -> str:
    """``repr(value)``, shortened: error messages quote what the client sent without echoing all of it."""
    text = repr(value)
    return text if len(text) <= MAX_QUOTED else f"{text[: MAX_QUOTED - 5]}...{text[-1]}"


@dataclass(frozen=True)
class FieldViolation:
    """One bad field: its path in the request (``messages[2].role``) and what is wrong with it."""

    field: str
    description: str


@dataclass
class ServiceError(Exception):
    """Base of the errors that reach the client as a gRPC status."""

    message: str
    code: grpc.StatusCode = grpc.StatusCode.INTERNAL
    reason: str = "INTERNAL"
    param: str | None = None
    retry_after: float | None = None  # seconds: a google.rpc.RetryInfo (HTTP Retry-After) when set

    def __str__(self) -> str:
        return self.message

    def details(self) -> list[object]:
        """google.rpc detail messages for this error."""
        metadata = {"param": self.param} if self.param else {}
        details: list[object] = [
            error_details_pb2.ErrorInfo(reason=self.reason, domain=ERROR_DOMAIN, metadata=metadata)
        ]
        if self.retry_after is not None:
            delay = duration_pb2.Duration()
            delay.FromTimedelta(datetime.timedelta(seconds=self.retry_after))
            details.append(error_details_pb2.RetryInfo(retry_delay=delay))
        return details


@dataclass
class InvalidArgument(ServiceError):
    """The request is malformed or out of range; names every offending field."""

    violations: list[FieldViolation] = field(default_factory=list)
    code: grpc.StatusCode = grpc.StatusCode.INVALID_ARGUMENT
    reason: str = "INVALID_ARGUMENT"

    @classmethod
    def of(cls, field_path: str, description: str) -> InvalidArgument:
        """One-violation error whose message reads ``field: description``."""
        return cls(
            f"{field_path}: {description}", param=field_path, violations=[FieldViolation(field_path, description)]
        )

    @classmethod
    def check(cls, violations: list[FieldViolation]) -> None:
        """Raise one error naming every violation (up to MAX_VIOLATIONS), if there is any."""
        if violations:
            shown = violations[:MAX_VIOLATIONS_IN_MESSAGE]
            message = "; ".join(f"{v.field}: {v.description}" for v in shown)
            if len(violations) > len(shown):
                message += f"; and {len(violations) - len(shown)} more"
            raise cls(message, param=shown[0].field, violations=violations[:MAX_VIOLATIONS])

    def details(self) -> list[object]:
        each = MAX_DESCRIPTIONS_CHARS // max(1, len(self.violations))
        bad_request = error_details_pb2.BadRequest(
            field_violations=[
                error_details_pb2.BadRequest.FieldViolation(field=v.field, description=shortened(v.description, each))
                for v in self.violations
            ]
        )
        return [bad_request, *super().details()]


@dataclass
class NotFound(ServiceError):
    """A named resource (model, response) does not exist."""

    code: grpc.StatusCode = grpc.StatusCode.NOT_FOUND
    reason: str = "NOT_FOUND"


@dataclass
class Unavailable(ServiceError):
    """The service cannot take the request now (starting, shutting down, engine gone)."""

    code: grpc.StatusCode = grpc.StatusCode.UNAVAILABLE
    reason: str = "UNAVAILABLE"
    retry_after: float | None = RETRY_AFTER_SECONDS


@dataclass
class ResourceExhausted(ServiceError):
    """No room for the request now (concurrency limit, full KV cache); retrying later may succeed."""

    code: grpc.StatusCode = grpc.StatusCode.RESOURCE_EXHAUSTED
    reason: str = "RESOURCE_EXHAUSTED"
    retry_after: float | None = RETRY_AFTER_SECONDS


@dataclass
class QuotaExceeded(ResourceExhausted):
    """A caller's own quota is used up (an API key's rate limit): google.rpc.QuotaFailure names it."""

    subject: str = ""  # what the quota is of ("api_key:rpm")
    description: str = ""

    def details(self) -> list[object]:
        violation = error_details_pb2.QuotaFailure.Violation(subject=self.subject, description=self.description)
        return [*super().details(), error_details_pb2.QuotaFailure(violations=[violation])]


@dataclass
class Internal(ServiceError):
    """The service failed the request; not the client's fault."""


def to_rpc_status(error: ServiceError) -> grpc.Status:
    """The grpc.Status (code, message, packed google.rpc details) for ``error``."""
    packed = []
    for detail in error.details():
        any_detail = any_pb2.Any()
        any_detail.Pack(detail)
        packed.append(any_detail)
    message = shortened(error.message, MAX_MESSAGE_CHARS)
    status = status_pb2.Status(code=_CODE_NUMBERS[error.code], message=message, details=packed)
    return rpc_status.to_status(status)


# grpc.StatusCode -> google.rpc.Code number, for google.rpc.Status.code.
_CODE_NUMBERS = {code: getattr(code_pb2, code.name) for code in grpc.StatusCode}
