"""Chat completions as OpenAI writes them: ``chat.completion``, its stream chunks, and stored completions."""

from __future__ import annotations

from typing import Any

from ovserve.clients.v1 import chat_pb2
from ovserve.rest_bridge.render.common import (
    FINISH_REASONS,
    ROLES,
    fingerprinted,
    prompt_logprobs,
    token_logprob,
    tool_call,
    usage,
)

# The tier that served a chat completion, as OpenAI's replies say it: there is one here, whatever was asked
# (docs/api/parameters.md: service_tier "accepted, no effect"; the Responses API's service sets the same on its
# objects).
SERVICE_TIER = "default"


def chat_logprobs(value: chat_pb2.ChatLogprobs) -> dict[str, Any]:
    """OpenAI's chat ``logprobs`` object."""
    return {
        "content": [token_logprob(entry) for entry in value.content],
        "refusal": [token_logprob(entry) for entry in value.refusal] or None,
    }


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
            out["tool_calls"] = [tool_call(call) for call in message.tool_calls]
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
        **({"prompt_logprobs": prompt_logprobs(response.prompt_logprobs)} if response.prompt_logprobs else {}),
    }, response.system_fingerprint)  # fmt: skip


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
            if call.HasField("custom"):  # a custom call comes whole
                fragment["custom"] = {"name": call.custom.name, "input": call.custom.input}
                calls.append(fragment)
                continue
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
    if chunk.prompt_logprobs:  # vLLM's extension, asked for: on one chunk
        out["prompt_logprobs"] = prompt_logprobs(chunk.prompt_logprobs)
    out["service_tier"] = SERVICE_TIER
    return fingerprinted(out, chunk.system_fingerprint)


# ---- stored chat completions ----


def stored_completion(completion: chat_pb2.CreateChatCompletionResponse) -> dict[str, Any]:
    """A stored chat completion as OpenAI returns it: the chat.completion object with its metadata."""
    return {**chat_completion(completion), "metadata": dict(completion.metadata)}


def stored_message(stored: chat_pb2.StoredChatMessage) -> dict[str, Any]:
    """One request message of a stored completion, as OpenAI's ChatCompletionMessageList item."""
    message = stored.message
    parts = [
        {"type": "text", "text": part.text}
        if part.type == "text"
        else {"type": part.type, "image_url": {"url": part.image_url.url}}
        for part in message.content_parts
    ]
    out: dict[str, Any] = {
        "id": stored.id,
        "role": message.role,
        "content": message.content if message.HasField("content") else None,
        "refusal": None,
        "content_parts": parts or None,
    }
    if message.HasField("name"):
        out["name"] = message.name
    if len(message.tool_calls):
        out["tool_calls"] = [tool_call(call) for call in message.tool_calls]
    if message.HasField("tool_call_id"):
        out["tool_call_id"] = message.tool_call_id
    return out


def page(data: list[dict[str, Any]], reply: Any) -> dict[str, Any]:
    """OpenAI's list object of stored completions or of their messages."""
    return {"object": "list", "data": data, "first_id": reply.first_id, "last_id": reply.last_id,
            "has_more": reply.has_more}  # fmt: skip
