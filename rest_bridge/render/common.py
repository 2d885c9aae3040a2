"""The messages of ``ovserve.v1.common`` as OpenAI writes them: finish reasons, roles, usage, tool calls, logprobs."""

from __future__ import annotations

from typing import Any

from ovserve.clients.v1 import common_pb2

# Response-side enums -> OpenAI's strings; *_UNSPECIFIED is null.
FINISH_REASONS: dict[int, str | None] = {
    common_pb2.FINISH_REASON_UNSPECIFIED: None,
    common_pb2.FINISH_REASON_STOP: "stop",
    common_pb2.FINISH_REASON_LENGTH: "length",
    common_pb2.FINISH_REASON_TOOL_CALLS: "tool_calls",
    common_pb2.FINISH_REASON_CONTENT_FILTER: "content_filter",
}
ROLES: dict[int, str | None] = {
    common_pb2.ROLE_UNSPECIFIED: None,
    common_pb2.ROLE_SYSTEM: "system",
    common_pb2.ROLE_DEVELOPER: "developer",
    common_pb2.ROLE_USER: "user",
    common_pb2.ROLE_ASSISTANT: "assistant",
    common_pb2.ROLE_TOOL: "tool",
}


def usage(value: common_pb2.Usage) -> dict[str, Any]:
    """OpenAI's usage object; the details objects only when the service filled them."""
    out: dict[str, Any] = {
        "prompt_tokens": value.prompt_tokens,
        "completion_tokens": value.completion_tokens,
        "total_tokens": value.total_tokens,
    }
    if value.HasField("prompt_tokens_details"):
        out["prompt_tokens_details"] = {"cached_tokens": value.prompt_tokens_details.cached_tokens}
    if value.HasField("completion_tokens_details"):
        out["completion_tokens_details"] = {"reasoning_tokens": value.completion_tokens_details.reasoning_tokens}
    return out


def token_logprob(entry: common_pb2.TokenLogprob) -> dict[str, Any]:
    """One token's logprob with its alternatives (``bytes`` null when the service sent none)."""
    return {
        "token": entry.token,
        "logprob": entry.logprob,
        "bytes": list(entry.bytes) or None,
        "top_logprobs": [
            {"token": top.token, "logprob": top.logprob, "bytes": list(top.bytes) or None} for top in entry.top_logprobs
        ],
    }


def tool_call(call: common_pb2.ToolCall) -> dict[str, Any]:
    """A complete tool call (a reply's, not a stream fragment): a function's, or a custom tool's."""
    if call.type == "custom":
        return {"id": call.id, "type": "custom", "custom": {"name": call.custom.name, "input": call.custom.input}}
    return {
        "id": call.id,
        "type": call.type or "function",
        "function": {"name": call.function.name, "arguments": call.function.arguments},
    }


def fingerprinted(out: dict[str, Any], fingerprint: str) -> dict[str, Any]:
    """``out`` with ``system_fingerprint`` if there is one: OpenAI's schema has it a string when present."""
    if fingerprint:
        out["system_fingerprint"] = fingerprint
    return out


def prompt_logprobs(entries: Any) -> list[dict[str, Any] | None]:
    """vLLM's ``prompt_logprobs``: per prompt token, {token id: {logprob, rank, decoded_token}}; null first."""
    return [
        {
            str(token.token_id): {"logprob": token.logprob, "rank": token.rank, "decoded_token": token.decoded_token}
            for token in entry.tokens
        }
        or None
        for entry in entries
    ]
