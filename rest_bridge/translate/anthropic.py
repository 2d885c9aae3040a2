"""Anthropic's Messages API bodies -> the chat request (``ovserve.v1.chat``): no second engine path.

A ``/messages`` body becomes the proto JSON of a chat request, checked by ``message.to_message``: ``system``
becomes a first system message, each Anthropic message one chat message (a user message's ``tool_result``
blocks each a ``tool`` message before it), ``tools`` / ``tool_choice`` / ``thinking`` / ``output_config``
their chat counterparts. Every top-level field is in one of three tables: mapped (``MAPPED``), accepted
without effect (``IGNORED``) or refused (``REFUSED``), each with the reason docs/api/messages.md repeats;
anything else is a 400 naming it. Blocks are checked the same way, by type (``_BLOCK_KEYS``).

Stop sequences are asked for with ``include_stop_str_in_output``, so the reply shows which one matched
(Anthropic's ``stop_sequence``); the renderer takes it off the text again (``render.anthropic``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeGuard

from ovserve.clients.polymorphic import json_type
from ovserve.clients.v1 import chat_pb2
from ovserve.rest_bridge.translate.body import bad_request
from ovserve.rest_bridge.translate.message import to_message

ChatRequest = chat_pb2.CreateChatCompletionRequest | chat_pb2.StreamChatCompletionRequest

# Accepted, with no effect here; the reason is what the docs say.
IGNORED = {
    "service_tier": "one tier here",
    "cache_control": "prefix caching is automatic; cache_read_input_tokens reports its hits",
    "inference_geo": "the model runs where the server runs",
    "speed": "one speed here",
    # Claude Code sends it (clearing old thinking or tool results past a threshold): the conversation sent is
    # rendered whole, which is what a client that keeps its own context expects.
    "context_management": "the server does not edit the context: the conversation sent is rendered whole",
}
# Refused with a 400 naming the field: Anthropic-hosted features with no counterpart here.
REFUSED = {
    "container": "code-execution containers are Anthropic's",
    "mcp_servers": "the server does not call MCP servers; run the tools client-side",
    "diagnostics": "no prompt-cache diagnostics are kept",
}
# Fields of each content block type that are read, or accepted without effect (cache_control, citations).
_BLOCK_KEYS = {
    "text": {"type", "text", "cache_control", "citations"},
    "image": {"type", "source", "cache_control"},
    "document": {"type", "source", "cache_control", "title", "context", "citations"},
    "tool_result": {"type", "tool_use_id", "content", "is_error", "cache_control"},
    "tool_use": {"type", "id", "name", "input", "cache_control"},
    "thinking": {"type", "thinking", "signature"},
    "redacted_thinking": {"type", "data"},
}
_ROLE_BLOCKS = {
    "user": {"text", "image", "document", "tool_result"},
    "assistant": {"text", "thinking", "redacted_thinking", "tool_use"},
    "system": {"text"},  # a system message within the conversation (the current API's; Claude Code sends them)
}
_TOOL_KEYS = {
    "name",
    "description",
    "input_schema",
    "type",
    "cache_control",
    "strict",
    "eager_input_streaming",
    "defer_loading",
}
# Anthropic's tool_choice type -> the chat request's tool_choice string ("tool" names one: named_tool_choice).
_TOOL_CHOICES = {"auto": "auto", "any": "required", "none": "none"}
# thinking.type -> reasoning_effort: any level but "none" turns the chat template's thinking on; the budget
# (thinking_token_budget) is budget_tokens.
_THINKING = {"enabled": "high", "adaptive": "high", "disabled": "none"}
_IMAGE_SOURCES = {"base64", "url"}
_DOCUMENT_SOURCES = {"base64", "url", "text"}
ERROR_PREFIX = "Error: "  # before a tool_result with is_error, so the model reads that the tool failed


@dataclass(frozen=True)
class MessagesCall:
    """A translated /messages body: the chat request, whether it streams, and what the reply needs to know."""

    chat: ChatRequest
    stream: bool
    stop_sequences: tuple[str, ...]
    show_thinking: bool  # thinking.display "omitted": thinking blocks come back empty


def messages_call(body: dict[str, Any]) -> MessagesCall:
    """The chat request for a POST /messages body (400s name the field in Anthropic's terms)."""
    proto_json, stop_sequences, show_thinking = _chat_json(body, counting=False)
    stream = body.get("stream", False)
    if stream is not None and not isinstance(stream, bool):
        raise bad_request("stream", f"stream: expected a boolean, got {json_type(stream)}")
    if stream:
        proto_json["stream_options"] = {"include_usage": True}  # message_delta carries the usage
        chat: ChatRequest = to_message(proto_json, chat_pb2.StreamChatCompletionRequest)
    else:
        chat = to_message(proto_json, chat_pb2.CreateChatCompletionRequest)
    return MessagesCall(chat, bool(stream), stop_sequences, show_thinking)


def count_tokens_request(body: dict[str, Any]) -> chat_pb2.CreateChatCompletionRequest:
    """The chat request that counts a POST /messages/count_tokens body's prompt: the same prompt as
    /messages would render (tools, images and thinking included), generating one token, so its usage's
    prompt_tokens is exactly what the chat path counts."""
    proto_json, _, _ = _chat_json(body, counting=True)
    return to_message(proto_json, chat_pb2.CreateChatCompletionRequest)


# ---- the body ----


def _chat_json(body: dict[str, Any], *, counting: bool) -> tuple[dict[str, Any], tuple[str, ...], bool]:
    """The chat request's proto JSON, the stop sequences, and whether thinking is shown."""
    allowed = _COUNTED if counting else MAPPED
    for name in body:
        if name in REFUSED:
            raise bad_request(name, f"{name}: not supported here ({REFUSED[name]})")
        if name not in allowed and name not in IGNORED:
            raise bad_request(name, f"{name}: Extra inputs are not permitted")
    out: dict[str, Any] = {"messages": []}
    for name in ("model", "messages") + (() if counting else ("max_tokens",)):
        if body.get(name) is None:
            raise bad_request(name, f"{name}: Field required")
    for name, value in body.items():
        if name in allowed and value is not None:
            allowed[name](value, out)
    stop_sequences = tuple(out.get("stop_sequences", ()))
    if counting:  # one token is enough to count the prompt; nothing that shapes the output is needed
        out["max_completion_tokens"] = 1
        for name in ("thinking_token_budget", "response_format"):
            out.pop(name, None)
    if stop_sequences:
        out["include_stop_str_in_output"] = True
    return out, stop_sequences, out.pop("_show_thinking", True)


def _model(value: Any, out: dict[str, Any]) -> None:
    out["model"] = _string(value, "model")


def _max_tokens(value: Any, out: dict[str, Any]) -> None:
    if not _is_int(value) or value < 1:
        raise bad_request("max_tokens", f"max_tokens: expected an integer of at least 1, got {json.dumps(value)}")
    out["max_completion_tokens"] = value


def _system(value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, list):
        texts = [_text_of(_block(block, f"system[{i}]", {"text"}), f"system[{i}]") for i, block in enumerate(value)]
        value = "\n".join(texts)
    out["messages"].insert(0, {"role": "system", "content": _string(value, "system")})


def _messages(value: Any, out: dict[str, Any]) -> None:
    if not isinstance(value, list) or not value:
        raise bad_request("messages", f"messages: expected a non-empty list, got {_shown(value)}")
    for i, message in enumerate(value):
        out["messages"] += _chat_messages(message, f"messages[{i}]")


def _metadata(value: Any, out: dict[str, Any]) -> None:
    metadata = _object(value, "metadata")
    for key in metadata:
        if key != "user_id":
            raise bad_request(f"metadata.{key}", f"metadata.{key}: Extra inputs are not permitted")
    if metadata.get("user_id") is not None:
        out["user"] = _string(metadata["user_id"], "metadata.user_id")


def _stop_sequences(value: Any, out: dict[str, Any]) -> None:
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise bad_request("stop_sequences", "stop_sequences: expected a list of non-empty strings")
    if value:
        out["stop_sequences"] = value


def _sampling(name: str) -> Callable[[Any, dict[str, Any]], None]:
    """temperature, top_p, top_k: the chat request's fields of the same name (older SDKs and raw HTTP send them)."""

    def copy(value: Any, out: dict[str, Any]) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise bad_request(name, f"{name}: expected a number, got {json_type(value)}")
        out[name] = value

    return copy


def _tools(value: Any, out: dict[str, Any]) -> None:
    if not isinstance(value, list):
        raise bad_request("tools", f"tools: expected a list, got {json_type(value)}")
    tools = [(_tool(tool, f"tools[{i}]"), tool.get("defer_loading")) for i, tool in enumerate(value)]
    # A deferred tool is loaded into the context only once Anthropic's tool search finds it; there is no such
    # search here, so it is never loaded: left out of the prompt, as Anthropic leaves it until then.
    out["tools"] = [tool for tool, deferred in tools if deferred is not True]


def _tool(value: Any, where: str) -> dict[str, Any]:
    tool = _object(value, where)
    kind = tool.get("type")
    if kind not in (None, "custom"):
        message = f"{where}.type: {_shown(kind)} is a server tool of Anthropic's; only client tools (custom) are served"
        raise bad_request(f"{where}.type", message)
    _only(tool, _TOOL_KEYS, where)
    function: dict[str, Any] = {"name": _string(tool.get("name"), f"{where}.name")}
    if tool.get("description") is not None:
        function["description"] = _string(tool["description"], f"{where}.description")
    function["parameters"] = _object(tool.get("input_schema"), f"{where}.input_schema")
    if tool.get("defer_loading") is not None:
        _boolean(tool["defer_loading"], f"{where}.defer_loading")
    if tool.get("strict") is not None:
        function["strict"] = _boolean(tool["strict"], f"{where}.strict")
    return {"type": "function", "function": function}


def _tool_choice(value: Any, out: dict[str, Any]) -> None:
    choice = _object(value, "tool_choice")
    kind = choice.get("type")
    if kind == "tool":
        _only(choice, {"type", "name", "disable_parallel_tool_use"}, "tool_choice")
        name = _string(choice.get("name"), "tool_choice.name")
        out["named_tool_choice"] = {"type": "function", "function": {"name": name}}
    elif kind in _TOOL_CHOICES:
        _only(choice, {"type", "disable_parallel_tool_use"}, "tool_choice")
        out["tool_choice"] = _TOOL_CHOICES[kind]
    else:
        raise bad_request("tool_choice.type", f"tool_choice.type: expected auto, any, tool or none, got {_shown(kind)}")
    if choice.get("disable_parallel_tool_use") is not None:
        disabled = _boolean(choice["disable_parallel_tool_use"], "tool_choice.disable_parallel_tool_use")
        out["parallel_tool_calls"] = not disabled


def _thinking(value: Any, out: dict[str, Any]) -> None:
    thinking = _object(value, "thinking")
    kind = thinking.get("type")
    if kind not in _THINKING:
        raise bad_request("thinking.type", f"thinking.type: expected enabled, adaptive or disabled, got {_shown(kind)}")
    _only(thinking, {"type", "budget_tokens", "display"} if kind == "enabled" else {"type", "display"}, "thinking")
    out["reasoning_effort"] = _THINKING[kind]
    if kind == "enabled":
        budget = thinking.get("budget_tokens")
        if not _is_int(budget) or budget < 0:
            message = f"thinking.budget_tokens: expected an integer of at least 0, got {json.dumps(budget)}"
            raise bad_request("thinking.budget_tokens", message)
        out["thinking_token_budget"] = budget
    display = thinking.get("display")
    if display not in (None, "summarized", "omitted"):
        raise bad_request(
            "thinking.display", f"thinking.display: expected summarized or omitted, got {_shown(display)}"
        )
    out["_show_thinking"] = display != "omitted"


def _output_config(value: Any, out: dict[str, Any]) -> None:
    config = _object(value, "output_config")
    _only(config, {"format", "effort"}, "output_config")
    # effort is accepted without effect: the token spend is max_tokens (and thinking.budget_tokens).
    if config.get("format") is None:
        return
    output_format = _object(config["format"], "output_config.format")
    _only(output_format, {"type", "schema"}, "output_config.format")
    if output_format.get("type") != "json_schema":
        kind = _shown(output_format.get("type"))
        raise bad_request("output_config.format.type", f"output_config.format.type: expected json_schema, got {kind}")
    schema = _object(output_format.get("schema"), "output_config.format.schema")
    out["response_format"] = {"type": "json_schema", "json_schema": {"name": "output", "schema": schema}}


_COUNTED: dict[str, Callable[[Any, dict[str, Any]], None]] = {  # what count_tokens takes
    "model": _model,
    "messages": _messages,
    "system": _system,
    "tools": _tools,
    "tool_choice": _tool_choice,
    "thinking": _thinking,
    "output_config": _output_config,
}
MAPPED: dict[str, Callable[[Any, dict[str, Any]], None]] = {
    **_COUNTED,
    "max_tokens": _max_tokens,
    "metadata": _metadata,
    "stop_sequences": _stop_sequences,
    "stream": lambda value, out: None,  # read by messages_call
    "temperature": _sampling("temperature"),
    "top_p": _sampling("top_p"),
    "top_k": _sampling("top_k"),
}


# ---- messages and their blocks ----


def _chat_messages(value: Any, where: str) -> list[dict[str, Any]]:
    """The chat messages of one Anthropic message: a user message's tool results first, each a tool message."""
    message = _object(value, where)
    _only(message, {"role", "content"}, where)
    role = message.get("role")
    if role not in _ROLE_BLOCKS:
        raise bad_request(f"{where}.role", f"{where}.role: expected user, assistant or system, got {_shown(role)}")
    content = message.get("content")
    if isinstance(content, str):
        return [{"role": role, "content": content}]
    if not isinstance(content, list):
        raise bad_request(f"{where}.content", f"{where}.content: expected a string or a list of blocks")
    blocks = [_block(block, f"{where}.content[{i}]", _ROLE_BLOCKS[role]) for i, block in enumerate(content)]
    places = [f"{where}.content[{i}]" for i in range(len(blocks))]
    if role == "assistant":
        return [_assistant(blocks, places)]
    if role == "system":
        return [{"role": "system", "content": "\n".join(_text_of(b, at) for b, at in zip(blocks, places, strict=True))}]
    results = [_tool_result(b, at) for b, at in zip(blocks, places, strict=True) if b["type"] == "tool_result"]
    parts = [_user_part(b, at) for b, at in zip(blocks, places, strict=True) if b["type"] != "tool_result"]
    return results + ([{"role": "user", "content_parts": parts}] if parts or not results else [])


def _assistant(blocks: list[dict[str, Any]], places: list[str]) -> dict[str, Any]:
    """An assistant turn: text blocks its content, thinking its reasoning_content, tool_use its tool_calls."""
    texts, reasoning, calls = [], [], []
    for block, where in zip(blocks, places, strict=True):
        kind = block["type"]
        if kind == "text":
            texts.append(_text_of(block, where))
        elif kind == "thinking":
            reasoning.append(_string(block.get("thinking"), f"{where}.thinking"))
        elif kind == "tool_use":
            tool_input = _object(block.get("input"), f"{where}.input")
            calls.append({
                "id": _string(block.get("id"), f"{where}.id"),
                "type": "function",
                "function": {"name": _string(block.get("name"), f"{where}.name"),
                             "arguments": json.dumps(tool_input, ensure_ascii=False)},
            })  # fmt: skip
        # redacted_thinking: Anthropic's encrypted reasoning, which no model here can read: dropped
    message: dict[str, Any] = {"role": "assistant"}
    if texts or not calls:
        message["content"] = "".join(texts)
    if reasoning:
        message["reasoning_content"] = "".join(reasoning)
    if calls:
        message["tool_calls"] = calls
    return message


def _tool_result(block: dict[str, Any], where: str) -> dict[str, Any]:
    """A tool_result block -> the tool message answering its call (text only: chat's tool messages hold text)."""
    content = block.get("content", "")
    if isinstance(content, list):
        texts = []
        for i, item in enumerate(content):
            inner = _block(item, f"{where}.content[{i}]", {"text", "image", "document"})
            if inner["type"] != "text":
                message = f"{where}.content[{i}].type: a tool result holds text here, not {inner['type']}"
                raise bad_request(f"{where}.content[{i}].type", message)
            texts.append(_text_of(inner, f"{where}.content[{i}]"))
        content = "\n".join(texts)
    text = _string(content, f"{where}.content")
    if block.get("is_error") is not None and _boolean(block["is_error"], f"{where}.is_error"):
        text = ERROR_PREFIX + text
    return {"role": "tool", "tool_call_id": _string(block.get("tool_use_id"), f"{where}.tool_use_id"), "content": text}


def _user_part(block: dict[str, Any], where: str) -> dict[str, Any]:
    """A user block -> a chat content part: text, an image (under the server's media policy) or a document."""
    kind = block["type"]
    if kind == "text":
        return {"type": "text", "text": _text_of(block, where)}
    source = _object(block.get("source"), f"{where}.source")
    source_type = source.get("type")
    allowed = _IMAGE_SOURCES if kind == "image" else _DOCUMENT_SOURCES
    if source_type not in allowed:
        expected = " or ".join(sorted(allowed))
        message = f"{where}.source.type: expected {expected}, got {_shown(source_type)}"
        raise bad_request(f"{where}.source.type", message)
    keys = {"type", "url"} if source_type == "url" else {"type", "media_type", "data"}
    _only(source, keys, f"{where}.source")
    if source_type == "url":
        url = _string(source.get("url"), f"{where}.source.url")
        return {"type": "image_url", "image_url": {"url": url}} if kind == "image" else _file_part(block, file_url=url)
    data = _string(source.get("data"), f"{where}.source.data")
    if source_type == "text":
        return {"type": "text", "text": data}
    media_type = _string(source.get("media_type"), f"{where}.source.media_type")
    data_url = f"data:{media_type};base64,{data}"
    return (
        {"type": "image_url", "image_url": {"url": data_url}}
        if kind == "image"
        else _file_part(block, file_data=data_url)
    )


def _file_part(block: dict[str, Any], **source: str) -> dict[str, Any]:
    """A document block as a chat file part; its title, if any, is the file's name."""
    title = block.get("title")
    return {"type": "file", "file": {**source, **({"filename": title} if isinstance(title, str) else {})}}


# ---- checks ----


def _block(value: Any, where: str, allowed: set[str]) -> dict[str, Any]:
    """A content block whose type is one of ``allowed`` and whose keys are its type's."""
    block = _object(value, where)
    kind = block.get("type")
    if kind not in allowed:
        expected = ", ".join(sorted(allowed))
        raise bad_request(f"{where}.type", f"{where}.type: expected one of {expected} here, got {_shown(kind)}")
    _only(block, _BLOCK_KEYS[kind], where)
    return block


def _text_of(block: dict[str, Any], where: str) -> str:
    return _string(block.get("text"), f"{where}.text")


def _only(value: dict[str, Any], keys: set[str], where: str) -> None:
    for key in value:
        if key not in keys:
            raise bad_request(f"{where}.{key}", f"{where}.{key}: Extra inputs are not permitted")


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise bad_request(where, f"{where}: expected an object, got {json_type(value)}")
    return value


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise bad_request(where, f"{where}: expected a string, got {json_type(value)}")
    return value


def _boolean(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise bad_request(where, f"{where}: expected a boolean, got {json_type(value)}")
    return value


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _shown(value: Any) -> str:
    """A client's value in an error message, cut short."""
    return json.dumps(value)[:100] if isinstance(value, str | int | float | bool) or value is None else json_type(value)
