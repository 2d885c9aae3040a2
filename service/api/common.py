"""Pieces the completions, chat and Responses APIs share."""

from __future__ import annotations

from typing import Any

from ovserve.clients.v1 import common_pb2
from ovserve.service.engine import FinishReason
from ovserve.service.errors import FieldViolation
from ovserve.service.models import ServedModel

# The engine's finish reasons -> the contract's. A cancelled request has no
# reader left, so its reason is never sent; None: still running.
FINISH_REASONS: dict[FinishReason | None, common_pb2.FinishReason] = {
    FinishReason.STOP: common_pb2.FINISH_REASON_STOP,
    FinishReason.LENGTH: common_pb2.FINISH_REASON_LENGTH,
    FinishReason.CANCELLED: common_pb2.FINISH_REASON_UNSPECIFIED,
    None: common_pb2.FINISH_REASON_UNSPECIFIED,
}


def usage(prompt_tokens: int, completion_tokens: int) -> common_pb2.Usage:
    """OpenAI's usage block."""
    return common_pb2.Usage(
        prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, total_tokens=prompt_tokens + completion_tokens
    )


def streaming_violations(request: Any, *, streaming: bool, rpc: str) -> list[FieldViolation]:
    """The ``stream`` / ``stream_options`` rules: unary RPCs refuse both, streaming ones accept them."""
    if streaming:
        return []
    violations = []
    if request.stream:
        violations.append(FieldViolation("stream", f"true is not valid here: call {rpc} to stream"))
    if "stream_options" in request.DESCRIPTOR.fields_by_name and request.HasField("stream_options"):
        violations.append(FieldViolation("stream_options", "only valid when streaming"))
    return violations


def token_texts(model: ServedModel, token_ids: list[int]) -> list[str]:
    """Each token's own text, for logprobs (special tokens kept; a partial character shows as U+FFFD)."""
    return model.engine.token_texts(token_ids)
