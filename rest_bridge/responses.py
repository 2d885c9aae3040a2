"""ovserve.v1 responses -> OpenAI JSON objects (plain dicts, ready for one ``json.dumps``).

Written by hand rather than with ``json_format.MessageToDict``: proto JSON
prints int64 as strings and enums as their names, leaves out empty fields
OpenAI always has (``logprobs: null``, ``finish_reason: null``), and is slow;
stream chunks go through ``chat_chunk`` / ``completion_chunk`` once per SSE
event, so they do only the work the chunk needs.
"""

from __future__ import annotations

import math
from typing import Any

from clients.v1 import chat_pb2, common_pb2, completion_pb2, model_pb2

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


# ---- chat ----


def _token_logprob(entry: common_pb2.TokenLogprob) -> dict[str, Any]:
    return {
        "token": entry.token,
        "logprob": entry.logprob,
        "bytes": list(entry.bytes) or None,
        "top_logprobs": [
            {"token": top.token, "logprob": top.logprob, "bytes": list(top.bytes) or None} for top in entry.top_logprobs
        ],
    }


def chat_logprobs(value: chat_pb2.ChatLogprobs) -> dict[str, Any]:
    """OpenAI's chat ``logprobs`` object."""
    return {
        "content": [_token_logprob(entry) for entry in value.content],
        "refusal": [_token_logprob(entry) for entry in value.refusal] or None,
    }


def _tool_call(call: common_pb2.ToolCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "type": call.type or "function",
        "function": {"name": call.function.name, "arguments": call.function.arguments},
    }


# The tier that served a chat completion, as OpenAI's replies say it: there is one here, whatever was asked
# (README: service_tier "accepted, no effect"; the Responses API's service sets the same on its objects).
SERVICE_TIER = "default"


def chat_completion(response: chat_pb2.CreateChatCompletionResponse) -> dict[str, Any]:
    """OpenAI's ``chat.completion`` object."""
    choices = []
    for choice in response.choices:
        message = choice.message
        has_calls = len(message.tool_calls) > 0
        out: dict[str, Any] = {
            "role": ROLES[message.role] or "assistant",
            # OpenAI: content is null only when the reply is tool calls alone.
            "content": message.content if message.HasField("content") or not has_calls else None,
            "refusal": message.refusal if message.HasField("refusal") else None,
        }
        if message.HasField("reasoning_content"):
            out["reasoning_content"] = message.reasoning_content
        if has_calls:
            out["tool_calls"] = [_tool_call(call) for call in message.tool_calls]
        choices.append({
            "index": choice.index,
            "message": out,
            "logprobs": chat_logprobs(choice.logprobs) if choice.HasField("logprobs") else None,
            "finish_reason": FINISH_REASONS[choice.finish_reason],
        })  # fmt: skip
    return fingerprinted({
        "id": response.id,
        "object": "chat.completion",
        "created": response.created,
        "model": response.model,
        "choices": choices,
        "usage": usage(response.usage),
        "service_tier": SERVICE_TIER,
    }, response.system_fingerprint)  # fmt: skip


def fingerprinted(out: dict[str, Any], fingerprint: str) -> dict[str, Any]:
    """``out`` with ``system_fingerprint`` if there is one: OpenAI's schema has it a string when present."""
    if fingerprint:
        out["system_fingerprint"] = fingerprint
    return out


def _delta(delta: chat_pb2.ChatCompletionDelta) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if delta.role:
        out["role"] = ROLES[delta.role]
    if delta.HasField("content"):
        out["content"] = delta.content
    if delta.HasField("reasoning_content"):
        out["reasoning_content"] = delta.reasoning_content
    if delta.tool_calls:
        calls = []
        for call in delta.tool_calls:
            fragment: dict[str, Any] = {"index": call.index}
            if call.id:  # id, type and name come on a call's first fragment only
                fragment["id"] = call.id
            if call.type:
                fragment["type"] = call.type
            function: dict[str, Any] = {"arguments": call.function.arguments}
            if call.function.name:
                function["name"] = call.function.name
            fragment["function"] = function
            calls.append(fragment)
        out["tool_calls"] = calls
    if delta.HasField("refusal"):
        out["refusal"] = delta.refusal
    return out


def chat_chunk(chunk: chat_pb2.StreamChatCompletionResponse, include_usage: bool) -> dict[str, Any]:
    """OpenAI's ``chat.completion.chunk``; with include_usage every chunk has ``usage`` (null but the last)."""
    out = {
        "id": chunk.id,
        "object": "chat.completion.chunk",
        "created": chunk.created,
        "model": chunk.model,
        "choices": [
            {
                "index": choice.index,
                "delta": _delta(choice.delta),
                "logprobs": chat_logprobs(choice.logprobs) if choice.HasField("logprobs") else None,
                "finish_reason": FINISH_REASONS[choice.finish_reason],
            }
            for choice in chunk.choices
        ],
    }
    if chunk.HasField("usage"):
        out["usage"] = usage(chunk.usage)
    elif include_usage:
        out["usage"] = None
    out["service_tier"] = SERVICE_TIER
    return fingerprinted(out, chunk.system_fingerprint)


# ---- completions ----


def completion_logprobs(value: completion_pb2.CompletionLogprobs) -> dict[str, Any]:
    """OpenAI's legacy completions ``logprobs``: parallel lists, top_logprobs as {token: logprob} dicts."""
    return {
        "tokens": list(value.tokens),
        # NaN marks an echoed first prompt token without a logprob: OpenAI's null.
        "token_logprobs": [None if math.isnan(logprob) else logprob for logprob in value.token_logprobs],
        # {} where no alternatives were asked for (logprobs 0): the schema's items are objects, never null.
        "top_logprobs": [dict(sorted(top.logprobs.items(), key=lambda item: -item[1])) for top in value.top_logprobs],
        "text_offset": list(value.text_offset),
    }


def _completion_choices(choices: Any) -> list[dict[str, Any]]:
    return [
        {
            "index": choice.index,
            "text": choice.text,
            "logprobs": completion_logprobs(choice.logprobs) if choice.HasField("logprobs") else None,
            "finish_reason": FINISH_REASONS[choice.finish_reason],
        }
        for choice in choices
    ]


def completion(response: completion_pb2.CreateCompletionResponse) -> dict[str, Any]:
    """OpenAI's ``text_completion`` object."""
    return fingerprinted({
        "id": response.id,
        "object": "text_completion",
        "created": response.created,
        "model": response.model,
        "choices": _completion_choices(response.choices),
        "usage": usage(response.usage),
    }, response.system_fingerprint)  # fmt: skip


def completion_chunk(chunk: completion_pb2.StreamCompletionResponse, include_usage: bool) -> dict[str, Any]:
    """One streamed ``text_completion`` chunk; with include_usage every chunk has ``usage`` (null but the last)."""
    out = {
        "id": chunk.id,
        "object": "text_completion",
        "created": chunk.created,
        "model": chunk.model,
        "choices": _completion_choices(chunk.choices),
    }
    if chunk.HasField("usage"):
        out["usage"] = usage(chunk.usage)
    elif include_usage:
        out["usage"] = None
    return fingerprinted(out, chunk.system_fingerprint)


# ---- models ----


def model(value: model_pb2.Model) -> dict[str, Any]:
    """OpenAI's model object, with vLLM's max_model_len, what the model serves (task) and, for a generating
    model, where its chat template came from and which parsers read its output (null: none)."""
    body: dict[str, Any] = {
        "id": value.id,
        "object": "model",
        "created": value.created,
        "owned_by": value.owned_by,
        "max_model_len": value.max_model_len,
        "task": value.task,
    }
    if value.chat_template_source:
        body["chat_template_source"] = value.chat_template_source
        body["tool_parser"] = value.tool_parser or None
        body["reasoning_parser"] = value.reasoning_parser or None
    return body


def model_list(response: model_pb2.ListModelsResponse) -> dict[str, Any]:
    """OpenAI's model list object."""
    return {"object": "list", "data": [model(item) for item in response.data]}
