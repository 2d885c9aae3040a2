"""Chat replies as Anthropic's Messages API writes them: the ``message`` object, its usage, and its errors.

A chat completion's reasoning becomes a ``thinking`` block, its text a ``text`` block, its tool calls
``tool_use`` blocks (ids ``toolu_...``, input the parsed arguments), in that order. The stream's events are
``render.anthropic_stream``'s.
"""

from __future__ import annotations

import json
from typing import Any

from ovserve.clients.v1 import chat_pb2, common_pb2
from ovserve.rest_bridge.errors import BridgeError

# Chat finish reason -> Anthropic's stop_reason (a matched stop sequence is told apart by ``stop_matched``).
STOP_REASONS: dict[int, str | None] = {
    common_pb2.FINISH_REASON_UNSPECIFIED: None,
    common_pb2.FINISH_REASON_STOP: "end_turn",
    common_pb2.FINISH_REASON_LENGTH: "max_tokens",
    common_pb2.FINISH_REASON_TOOL_CALLS: "tool_use",
    common_pb2.FINISH_REASON_CONTENT_FILTER: "refusal",
}
# HTTP status -> Anthropic's error type (docs.anthropic.com, "Errors"); any other 5xx is api_error.
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    409: "invalid_request_error",
    413: "request_too_large",
    415: "invalid_request_error",
    429: "rate_limit_error",
    499: "invalid_request_error",
    503: "overloaded_error",
    504: "timeout_error",
}
MESSAGE_PREFIX, TOOL_USE_PREFIX = "msg_", "toolu_"
# The chat request's fields whose names an error from the service may give, -> the Anthropic field they came from.
ANTHROPIC_FIELDS = {
    "max_completion_tokens": "max_tokens",
    "thinking_token_budget": "thinking.budget_tokens",
    "reasoning_effort": "thinking",
    "named_tool_choice": "tool_choice",
    "response_format": "output_config.format",
    "user": "metadata.user_id",
    "stop": "stop_sequences",  # (the service's stop_sequences, as OpenAI's name for it)
}


def error_body(error: BridgeError) -> dict[str, Any]:
    """Anthropic's error envelope for a refusal; the field it names leads the message when the message does not
    already name it (Anthropic's envelope has no ``param``)."""
    message, param = error.message, ANTHROPIC_FIELDS.get(error.param or "", error.param)
    if param and param != error.param and message.startswith(f"{error.param}:"):  # the service's name for it
        message = param + message.removeprefix(str(error.param))
    elif param and param not in message:
        message = f"{param}: {message}"
    status = error.status_code
    error_type = ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": error_type, "message": message}}


def message_id(chat_id: str) -> str:
    """The message id for a chat completion id (``chatcmpl-X`` -> ``msg_X``)."""
    return MESSAGE_PREFIX + chat_id.removeprefix("chatcmpl-")


def tool_use_id(call_id: str) -> str:
    """The tool_use id for a chat tool call id (``call_X`` -> ``toolu_X``; one sent back as ``toolu_`` stays)."""
    return call_id if call_id.startswith(TOOL_USE_PREFIX) else TOOL_USE_PREFIX + call_id.removeprefix("call_")


def tool_input(arguments: str) -> dict[str, Any]:
    """A tool call's arguments as Anthropic's ``input`` object; arguments that are not a JSON object (a model
    that broke the format) come back under ``"arguments"`` as text rather than being lost."""
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {"arguments": arguments}


def stop_matched(text: str, stop_sequences: tuple[str, ...]) -> str | None:
    """The stop sequence ``text`` ends with (the longest), if any: the request asked for it to be kept."""
    matched = [stop for stop in stop_sequences if text.endswith(stop)]
    return max(matched, key=len) if matched else None


def usage(value: common_pb2.Usage) -> dict[str, Any]:
    """Anthropic's usage: input_tokens leaves out the tokens read from the prefix cache (cache_read_input_tokens),
    as Anthropic counts them; nothing is written to a cache on request (cache_creation_input_tokens 0)."""
    cached = value.prompt_tokens_details.cached_tokens if value.HasField("prompt_tokens_details") else 0
    return {
        "input_tokens": value.prompt_tokens - cached,
        "output_tokens": value.completion_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": cached,
    }


def message(
    response: chat_pb2.CreateChatCompletionResponse, stop_sequences: tuple[str, ...], show_thinking: bool
) -> dict[str, Any]:
    """Anthropic's ``message`` object for a chat completion (its one choice)."""
    choice = response.choices[0]
    reply = choice.message
    content: list[dict[str, Any]] = []
    if reply.HasField("reasoning_content"):
        content.append({"type": "thinking", "thinking": reply.reasoning_content if show_thinking else "",
                        "signature": ""})  # fmt: skip
    text = reply.content
    stop_reason, stop_sequence = STOP_REASONS[choice.finish_reason], None
    if choice.finish_reason == common_pb2.FINISH_REASON_STOP and (stop_sequence := stop_matched(text, stop_sequences)):
        stop_reason, text = "stop_sequence", text.removesuffix(stop_sequence)
    if text or not (content or reply.tool_calls):  # Anthropic has an empty text block for an empty reply
        content.append({"type": "text", "text": text})
    content += [
        {"type": "tool_use", "id": tool_use_id(call.id), "name": call.function.name,
         "input": tool_input(call.function.arguments)}
        for call in reply.tool_calls
    ]  # fmt: skip
    return {
        "id": message_id(response.id),
        "type": "message",
        "role": "assistant",
        "model": response.model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": stop_sequence,
        "usage": usage(response.usage),
    }


def token_count(response: chat_pb2.CreateChatCompletionResponse) -> dict[str, Any]:
    """count_tokens' answer: the prompt's tokens as the chat path counted them."""
    return {"input_tokens": response.usage.prompt_tokens}
