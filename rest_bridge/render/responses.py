"""The Responses API as OpenAI writes it: the Response object, input items, and stream events -> (type, JSON).

OpenAI's Response object prints every echoed request field (null when unset), items and parts carry a ``type``
taken from their oneof field name, enums are lower-case strings, and ``google.protobuf.Struct`` values (tool
parameters, JSON schemas) print integers as integers. ``stream_event`` runs once per SSE event (and WebSocket
message), so each event converter touches only its own fields.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from google.protobuf import struct_pb2

from ovserve.clients.v1 import common_pb2, response_events_pb2, response_object_pb2, response_pb2
from ovserve.rest_bridge.render.common import ROLES

ro = response_object_pb2

RESPONSE_STATUSES: dict[int, str | None] = {
    ro.RESPONSE_STATUS_UNSPECIFIED: None,
    ro.RESPONSE_STATUS_QUEUED: "queued",
    ro.RESPONSE_STATUS_IN_PROGRESS: "in_progress",
    ro.RESPONSE_STATUS_COMPLETED: "completed",
    ro.RESPONSE_STATUS_INCOMPLETE: "incomplete",
    ro.RESPONSE_STATUS_FAILED: "failed",
    ro.RESPONSE_STATUS_CANCELLED: "cancelled",
}
ITEM_STATUSES: dict[int, str | None] = {
    ro.ITEM_STATUS_UNSPECIFIED: None,
    ro.ITEM_STATUS_IN_PROGRESS: "in_progress",
    ro.ITEM_STATUS_COMPLETED: "completed",
    ro.ITEM_STATUS_INCOMPLETE: "incomplete",
    ro.ITEM_STATUS_CALLING: "calling",
    ro.ITEM_STATUS_FAILED: "failed",
}
INCOMPLETE_REASONS: dict[int, str | None] = {
    ro.INCOMPLETE_REASON_UNSPECIFIED: None,
    ro.INCOMPLETE_REASON_MAX_OUTPUT_TOKENS: "max_output_tokens",
    ro.INCOMPLETE_REASON_CONTENT_FILTER: "content_filter",
}

# ---- google.protobuf.Struct ----


def value(entry: struct_pb2.Value) -> Any:
    """A Struct Value as JSON; integral numbers print as integers (a schema's ``"minItems": 1``)."""
    kind = entry.WhichOneof("kind")
    if kind == "number_value":
        number = entry.number_value
        return int(number) if number.is_integer() and abs(number) < 2**53 else number
    if kind == "struct_value":
        return struct(entry.struct_value)
    if kind == "list_value":
        return [value(item) for item in entry.list_value.values]
    if kind in ("string_value", "bool_value"):
        return getattr(entry, kind)
    return None


def struct(entry: struct_pb2.Struct) -> dict[str, Any]:
    """A Struct as a JSON object."""
    return {key: value(item) for key, item in entry.fields.items()}


# ---- parts and items ----


def logprobs(entries: Any) -> list[dict[str, Any]]:
    """Responses logprobs: token, logprob, bytes and top_logprobs for every token."""
    return [
        {
            "token": entry.token,
            "logprob": entry.logprob,
            "bytes": list(entry.bytes),
            "top_logprobs": [
                {"token": top.token, "logprob": top.logprob, "bytes": list(top.bytes)} for top in entry.top_logprobs
            ],
        }
        for entry in entries
    ]


def output_text(part: ro.OutputText) -> dict[str, Any]:
    """An ``output_text`` part."""
    return {
        "type": "output_text",
        "text": part.text,
        "annotations": [struct(annotation) for annotation in part.annotations],
        "logprobs": logprobs(part.logprobs),
    }


def content_part(part: ro.OutputContentPart) -> dict[str, Any]:
    """An output content part with its ``type`` (output_text, refusal, reasoning_text)."""
    kind = part.WhichOneof("part")
    if kind == "output_text":
        return output_text(part.output_text)
    if kind == "refusal":
        return {"type": "refusal", "refusal": part.refusal.refusal}
    if kind == "reasoning_text":
        return {"type": "reasoning_text", "text": part.reasoning_text.text}
    return {"type": None}


def summary_text(part: ro.SummaryText) -> dict[str, Any]:
    """A ``summary_text`` part."""
    return {"type": "summary_text", "text": part.text}


def output_item(item: ro.OutputItem) -> dict[str, Any]:
    """An output item with its ``type`` (message, function_call, reasoning)."""
    kind = item.WhichOneof("item")
    if kind == "message":
        message = item.message
        return {
            "id": message.id,
            "type": "message",
            "role": ROLES[message.role] or "assistant",
            "status": ITEM_STATUSES[message.status],
            "content": [content_part(part) for part in message.content],
        }
    if kind == "function_call":
        call = item.function_call
        return {
            "id": call.id,
            "type": "function_call",
            "call_id": call.call_id,
            "name": call.name,
            "arguments": call.arguments,
            "status": ITEM_STATUSES[call.status],
        }
    if kind == "reasoning":
        reasoning = item.reasoning
        out: dict[str, Any] = {
            "id": reasoning.id,
            "type": "reasoning",
            "summary": [summary_text(part) for part in reasoning.summary],
        }
        if reasoning.content:
            out["content"] = [{"type": "reasoning_text", "text": part.text} for part in reasoning.content]
        out["status"] = ITEM_STATUSES[reasoning.status]
        return out
    if kind == "custom_tool_call":
        custom = item.custom_tool_call
        return {
            "id": custom.id, "type": kind, "call_id": custom.call_id, "name": custom.name, "input": custom.input,
            "status": ITEM_STATUSES[custom.status],
        }  # fmt: skip
    if kind == "mcp_list_tools":
        listed = item.mcp_list_tools
        return {
            "id": listed.id, "type": kind, "server_label": listed.server_label,
            "tools": [mcp_tool_info(entry) for entry in listed.tools], "error": _optional(listed, "error"),
        }  # fmt: skip
    if kind == "mcp_call":
        call = item.mcp_call
        return {
            "id": call.id, "type": kind, "server_label": call.server_label, "name": call.name,
            "arguments": call.arguments, "output": _optional(call, "output"), "error": _optional(call, "error"),
            "status": ITEM_STATUSES[call.status], "approval_request_id": _optional(call, "approval_request_id"),
        }  # fmt: skip
    if kind == "mcp_approval_request":
        asked = item.mcp_approval_request
        return {
            "id": asked.id, "type": kind, "server_label": asked.server_label, "name": asked.name,
            "arguments": asked.arguments,
        }  # fmt: skip
    return {"type": None}


def mcp_tool_info(entry: ro.McpToolInfo) -> dict[str, Any]:
    """One tool of an mcp_list_tools item (OpenAI's MCPListToolsTool)."""
    return {
        "name": entry.name,
        "description": _optional(entry, "description"),
        "input_schema": struct(entry.input_schema),
        "annotations": struct(entry.annotations) if entry.HasField("annotations") else None,
    }


# ---- the Response object ----


def tool(entry: ro.ResponseTool) -> dict[str, Any]:
    """A function tool in the Responses API's flat form (the nested chat form is flattened), or an mcp tool."""
    if entry.type == "mcp":
        return mcp_tool(entry)
    if entry.type == "custom":
        fmt: dict[str, Any] = {"type": entry.format.type or "text"}
        if entry.format.HasField("grammar"):
            fmt.update(syntax=entry.format.grammar.syntax, definition=entry.format.grammar.definition)  # flat, as sent
        described = {"description": entry.description} if entry.HasField("description") else {}  # never null
        return {"type": "custom", "name": entry.name, **described, "format": fmt}
    source: Any = entry.function if entry.HasField("function") else entry
    return {
        "type": entry.type or "function",
        "name": source.name,
        "description": source.description if source.HasField("description") else None,
        "parameters": struct(source.parameters) if source.HasField("parameters") else None,
        "strict": source.strict if source.HasField("strict") else None,
    }


def mcp_tool(entry: ro.ResponseTool) -> dict[str, Any]:
    """An mcp tool as OpenAI echoes it (its headers left out: they may hold credentials)."""
    allowed: Any = list(entry.allowed_tools) or None
    if entry.HasField("allowed_tools_filter"):
        allowed = _tool_filter(entry.allowed_tools_filter)
    approval: Any = _optional(entry, "require_approval") or "always"
    if entry.HasField("require_approval_filter"):
        given = entry.require_approval_filter
        approval = {name: _tool_filter(getattr(given, name)) for name in ("always", "never") if given.HasField(name)}
    return {
        "type": "mcp", "server_label": entry.server_label, "server_url": entry.server_url or None,
        "server_description": _optional(entry, "server_description"), "headers": None,
        "allowed_tools": allowed, "require_approval": approval,
    }  # fmt: skip


def _tool_filter(entry: ro.McpToolFilter) -> dict[str, Any]:
    out: dict[str, Any] = {"tool_names": list(entry.tool_names)}
    if entry.HasField("read_only"):
        out["read_only"] = entry.read_only
    return out


def tool_choice(response: ro.Response) -> Any:
    """``tool_choice``: the string form, {"type":"function","name":...} or {"type":"allowed_tools",...}."""
    if response.HasField("named_tool_choice"):
        named = response.named_tool_choice
        if named.type == "allowed_tools":
            tools = [{"type": tool.type or "function", "name": tool.name or tool.function.name} for tool in named.tools]
            return {"type": "allowed_tools", "mode": named.mode, "tools": tools}
        if named.type == "mcp":
            return {"type": "mcp", "server_label": named.server_label, "name": named.name or None}
        return {"type": named.type or "function", "name": named.name or named.function.name}
    return response.tool_choice if response.HasField("tool_choice") else "auto"


def text_config(response: ro.Response) -> dict[str, Any]:
    """``text``: {"format": {...}, "verbosity": ...}, format {"type":"text"} when unset."""
    verbosity = {"verbosity": response.text.verbosity} if response.text.HasField("verbosity") else {}
    if not response.text.HasField("format"):
        return {"format": {"type": "text"}, **verbosity}
    given = response.text.format
    out: dict[str, Any] = {"type": given.type or "text"}
    if given.type == "json_schema":
        out["name"] = given.name
        out["schema"] = struct(given.schema)
        if given.HasField("description"):
            out["description"] = given.description
        out["strict"] = given.strict if given.HasField("strict") else None
    return {"format": out, **verbosity}


def usage(entry: ro.ResponseUsage) -> dict[str, Any]:
    """Responses usage, with both details objects (OpenAI always has them).

    ``cache_write_tokens`` (current OpenAI API, required by openai's types) has no
    proto field: printed as 0.
    """
    return {
        "input_tokens": entry.input_tokens,
        "input_tokens_details": {"cached_tokens": entry.input_tokens_details.cached_tokens, "cache_write_tokens": 0},
        "output_tokens": entry.output_tokens,
        "output_tokens_details": {"reasoning_tokens": entry.output_tokens_details.reasoning_tokens},
        "total_tokens": entry.total_tokens,
    }


def _optional(message: Any, name: str) -> Any:
    return getattr(message, name) if message.HasField(name) else None


def response_format(entry: common_pb2.ResponseFormat) -> dict[str, Any]:
    """The OVMS-style ``response_format`` echo."""
    out: dict[str, Any] = {"type": entry.type}
    if entry.HasField("json_schema"):
        schema = entry.json_schema
        out["json_schema"] = {
            "name": schema.name,
            "description": _optional(schema, "description"),
            "schema": struct(schema.schema),
            "strict": _optional(schema, "strict"),
        }
    if entry.structures:
        out["structures"] = [
            {"begin": tag.begin, "schema": struct(tag.schema), "end": tag.end} for tag in entry.structures
        ]
    if entry.triggers:
        out["triggers"] = list(entry.triggers)
    if entry.HasField("format"):
        out["format"] = struct(entry.format)
    return out


# vLLM/OVMS extensions echoed beside OpenAI's fields, only when the request set them.
_EXTENSIONS = (
    "ignore_eos", "include_stop_str_in_output", "skip_special_tokens", "top_k", "min_p", "repetition_penalty",
    "seed", "n", "best_of", "length_penalty", "diversity_penalty",
    "num_assistant_tokens", "assistant_confidence_threshold", "max_ngram_size", "logprobs",
)  # fmt: skip


def response(entry: ro.Response) -> dict[str, Any]:
    """OpenAI's Response object ("object": "response")."""
    out: dict[str, Any] = {
        "id": entry.id,
        "object": entry.object or "response",
        "created_at": entry.created_at,
        "status": RESPONSE_STATUSES[entry.status],
        "background": _optional(entry, "background"),
        "completed_at": _optional(entry, "completed_at"),
        "error": {"code": entry.error.code, "message": entry.error.message} if entry.HasField("error") else None,
        "incomplete_details": (
            {"reason": INCOMPLETE_REASONS[entry.incomplete_details.reason]}
            if entry.HasField("incomplete_details")
            else None
        ),
        "instructions": _optional(entry, "instructions"),
        "max_output_tokens": _optional(entry, "max_output_tokens"),
        "model": entry.model,
        "output": [output_item(item) for item in entry.output],
        "parallel_tool_calls": entry.parallel_tool_calls if entry.HasField("parallel_tool_calls") else True,
        "previous_response_id": _optional(entry, "previous_response_id"),
        "reasoning": {
            "effort": _optional(entry.reasoning, "effort"),
            "summary": _optional(entry.reasoning, "summary"),
            # OpenRouter's budget: echoed only when sent (OpenAI's object has no such key)
            **({"max_tokens": entry.reasoning.max_tokens} if entry.reasoning.HasField("max_tokens") else {}),
        },
        "store": _optional(entry, "store"),
        "temperature": _optional(entry, "temperature"),
        "text": text_config(entry),
        "tool_choice": tool_choice(entry),
        "tools": [tool(item) for item in entry.tools],
        "top_logprobs": _optional(entry, "top_logprobs"),
        "top_p": _optional(entry, "top_p"),
        "presence_penalty": _optional(entry, "presence_penalty"),
        "frequency_penalty": _optional(entry, "frequency_penalty"),
        "service_tier": entry.service_tier or "default",
        "max_tool_calls": _optional(entry, "max_tool_calls"),
        "prompt_cache_retention": _optional(entry, "prompt_cache_retention"),
        "safety_identifier": _optional(entry, "safety_identifier"),
        "prompt_cache_key": _optional(entry, "prompt_cache_key"),
        "truncation": _optional(entry, "truncation"),
        "usage": usage(entry.usage) if entry.HasField("usage") else None,
        "metadata": dict(entry.metadata),
        "conversation": {"id": entry.conversation.id} if entry.HasField("conversation") else None,
    }
    if entry.user:  # a string in OpenAI's schema, never null: left out when not sent
        out["user"] = entry.user
    if entry.stop_sequences:
        out["stop"] = list(entry.stop_sequences)
    elif entry.HasField("stop"):
        out["stop"] = entry.stop
    for name in _EXTENSIONS:
        if entry.HasField(name):
            out[name] = getattr(entry, name)
    if entry.HasField("response_format"):
        out["response_format"] = response_format(entry.response_format)
    if entry.HasField("chat_template_kwargs"):
        out["chat_template_kwargs"] = struct(entry.chat_template_kwargs)
    return out


def deleted(reply: response_pb2.DeleteResponseResponse) -> dict[str, Any]:
    """OpenAI's deletion confirmation."""
    return {"id": reply.id, "object": reply.object or "response", "deleted": reply.deleted}


# ---- input items (GET /responses/{id}/input_items) ----


def input_part(part: ro.InputContentPart) -> dict[str, Any]:
    """An input content part in OpenAI's form."""
    kind = part.type
    if kind == "input_image":
        return {"type": kind, "image_url": part.image_url or None, "detail": part.detail or "auto", "file_id": None}
    if kind == "input_file":
        given = {"file_data": part.file_data, "file_url": part.file_url, "filename": part.filename}
        return {"type": kind, "file_id": part.file_id or None, **{key: value for key, value in given.items() if value}}
    if kind == "output_text":
        return {
            "type": kind,
            "text": part.text,
            "annotations": [struct(annotation) for annotation in part.annotations],
            "logprobs": logprobs(part.logprobs),
        }
    if kind == "refusal":
        return {"type": kind, "refusal": part.refusal}
    return {"type": kind, "text": part.text}  # input_text, reasoning_text, summary_text


def input_item(item: ro.InputItem) -> dict[str, Any]:
    """A stored input item as OpenAI lists it; a string ``content`` prints as one text part."""
    kind = item.type or "message"
    status = item.status or "completed"
    if kind == "message":
        if item.content_parts:
            content = [input_part(part) for part in item.content_parts]
        elif item.role == "assistant":
            content = [{"type": "output_text", "text": item.content, "annotations": [], "logprobs": []}]
        else:
            content = [{"type": "input_text", "text": item.content}]
        phase = {"phase": item.phase} if item.phase else {}
        return {"id": item.id, "type": kind, "role": item.role, "status": status, "content": content, **phase}
    if kind == "function_call":
        return {
            "id": item.id, "type": kind, "call_id": item.call_id, "name": item.name,
            "arguments": item.arguments, "status": status,
        }  # fmt: skip
    if kind == "custom_tool_call":
        return {
            "id": item.id, "type": kind, "call_id": item.call_id, "name": item.name, "input": item.input,
            "status": status,
        }  # fmt: skip
    if kind in ("function_call_output", "custom_tool_call_output"):
        output: Any = [input_part(part) for part in item.output_parts] if item.output_parts else item.output
        return {"id": item.id, "type": kind, "call_id": item.call_id, "output": output, "status": status}
    if kind == "reasoning":
        out: dict[str, Any] = {"id": item.id, "type": kind, "summary": [input_part(p) for p in item.summary]}
        if item.content_parts:
            out["content"] = [input_part(part) for part in item.content_parts]
        out["status"] = status
        return out
    if kind == "compaction":
        return {"id": item.id, "type": kind, "encrypted_content": item.encrypted_content}
    if kind == "mcp_approval_response":
        reason = _optional(item, "reason")
        return {"id": item.id, "type": kind, "approval_request_id": item.approval_request_id,
                "approve": item.approve, "reason": reason}  # fmt: skip
    if kind == "mcp_list_tools":
        return {"id": item.id, "type": kind, "server_label": item.server_label,
                "tools": [mcp_tool_info(entry) for entry in item.tools], "error": _optional(item, "error")}  # fmt: skip
    if kind in ("mcp_call", "mcp_approval_request"):
        out = {"id": item.id, "type": kind, "server_label": item.server_label, "name": item.name,
               "arguments": item.arguments}  # fmt: skip
        if kind == "mcp_call":
            out.update(output=item.output or None, error=_optional(item, "error"))
        return out
    return {"id": item.id, "type": kind}  # item_reference


def input_item_list(reply: response_pb2.ListResponseInputItemsResponse) -> dict[str, Any]:
    """OpenAI's list object of input items."""
    return {
        "object": reply.object or "list",
        "data": [input_item(item) for item in reply.data],
        "first_id": reply.first_id or None,
        "last_id": reply.last_id or None,
        "has_more": reply.has_more,
    }


def compacted(reply: response_pb2.CompactResponseResponse) -> dict[str, Any]:
    """OpenAI's compacted response object ("response.compaction")."""
    return {
        "id": reply.id,
        "object": reply.object or "response.compaction",
        "output": [input_item(item) for item in reply.output],
        "created_at": reply.created_at,
        "usage": usage(reply.usage),
    }


def input_tokens(reply: response_pb2.CountResponseInputTokensResponse) -> dict[str, Any]:
    """OpenAI's input token count ("response.input_tokens")."""
    return {"object": reply.object or "response.input_tokens", "input_tokens": reply.input_tokens}


# ---- stream events ----

ev = response_events_pb2


def _lifecycle(event: Any) -> dict[str, Any]:
    return {"response": response(event.response)}


def _item_event(event: Any) -> dict[str, Any]:
    return {"output_index": event.output_index, "item": output_item(event.item)}


def _part_event(event: Any) -> dict[str, Any]:
    return {
        "item_id": event.item_id,
        "output_index": event.output_index,
        "content_index": event.content_index,
        "part": content_part(event.part),
    }


def _text_delta(event: ev.ResponseOutputTextDeltaEvent) -> dict[str, Any]:
    return {
        "item_id": event.item_id,
        "output_index": event.output_index,
        "content_index": event.content_index,
        "delta": event.delta,
        "logprobs": logprobs(event.logprobs),
    }


def _text_done(event: ev.ResponseOutputTextDoneEvent) -> dict[str, Any]:
    return {
        "item_id": event.item_id,
        "output_index": event.output_index,
        "content_index": event.content_index,
        "text": event.text,
        "logprobs": logprobs(event.logprobs),
    }


def _content_field(name: str) -> Callable[[Any], dict[str, Any]]:
    """An event with item_id, output_index, content_index and one more field ``name``."""

    def convert(event: Any) -> dict[str, Any]:
        return {
            "item_id": event.item_id,
            "output_index": event.output_index,
            "content_index": event.content_index,
            name: getattr(event, name),
        }

    return convert


def _summary_part(event: Any) -> dict[str, Any]:
    return {
        "item_id": event.item_id,
        "output_index": event.output_index,
        "summary_index": event.summary_index,
        "part": summary_text(event.part),
    }


def _summary_field(name: str) -> Callable[[Any], dict[str, Any]]:
    def convert(event: Any) -> dict[str, Any]:
        return {
            "item_id": event.item_id,
            "output_index": event.output_index,
            "summary_index": event.summary_index,
            name: getattr(event, name),
        }

    return convert


def _arguments_field(name: str) -> Callable[[Any], dict[str, Any]]:
    def convert(event: Any) -> dict[str, Any]:
        return {"item_id": event.item_id, "output_index": event.output_index, name: getattr(event, name)}

    return convert


def _mcp_item(event: ev.ResponseMcpItemEvent) -> dict[str, Any]:
    return {"item_id": event.item_id, "output_index": event.output_index}


def _error(event: ev.ResponseErrorEvent) -> dict[str, Any]:
    return {"code": _optional(event, "code"), "message": event.message, "param": _optional(event, "param")}


# ResponseStreamEvent's oneof field -> (OpenAI's event type, converter of the event's own fields).
EVENTS: dict[str, tuple[str, Callable[[Any], dict[str, Any]]]] = {
    "created": ("response.created", _lifecycle),
    "queued": ("response.queued", _lifecycle),
    "in_progress": ("response.in_progress", _lifecycle),
    "output_item_added": ("response.output_item.added", _item_event),
    "output_item_done": ("response.output_item.done", _item_event),
    "content_part_added": ("response.content_part.added", _part_event),
    "content_part_done": ("response.content_part.done", _part_event),
    "output_text_delta": ("response.output_text.delta", _text_delta),
    "output_text_done": ("response.output_text.done", _text_done),
    "refusal_delta": ("response.refusal.delta", _content_field("delta")),
    "refusal_done": ("response.refusal.done", _content_field("refusal")),
    "reasoning_summary_part_added": ("response.reasoning_summary_part.added", _summary_part),
    "reasoning_summary_part_done": ("response.reasoning_summary_part.done", _summary_part),
    "reasoning_summary_text_delta": ("response.reasoning_summary_text.delta", _summary_field("delta")),
    "reasoning_summary_text_done": ("response.reasoning_summary_text.done", _summary_field("text")),
    "reasoning_text_delta": ("response.reasoning_text.delta", _content_field("delta")),
    "reasoning_text_done": ("response.reasoning_text.done", _content_field("text")),
    "function_call_arguments_delta": ("response.function_call_arguments.delta", _arguments_field("delta")),
    "function_call_arguments_done": (
        "response.function_call_arguments.done",
        lambda event: {**_arguments_field("arguments")(event), "name": event.name},
    ),
    "completed": ("response.completed", _lifecycle),
    "incomplete": ("response.incomplete", _lifecycle),
    "failed": ("response.failed", _lifecycle),
    "error": ("error", _error),
    "mcp_list_tools_in_progress": ("response.mcp_list_tools.in_progress", _mcp_item),
    "mcp_list_tools_completed": ("response.mcp_list_tools.completed", _mcp_item),
    "mcp_list_tools_failed": ("response.mcp_list_tools.failed", _mcp_item),
    "mcp_call_in_progress": ("response.mcp_call.in_progress", _mcp_item),
    "mcp_call_completed": ("response.mcp_call.completed", _mcp_item),
    "mcp_call_failed": ("response.mcp_call.failed", _mcp_item),
    "mcp_call_arguments_delta": ("response.mcp_call_arguments.delta", _arguments_field("delta")),
    "mcp_call_arguments_done": ("response.mcp_call_arguments.done", _arguments_field("arguments")),
    "custom_tool_call_input_delta": ("response.custom_tool_call_input.delta", _arguments_field("delta")),
    "custom_tool_call_input_done": ("response.custom_tool_call_input.done", _arguments_field("input")),
}
TERMINAL = {"response.completed", "response.incomplete", "response.failed", "error"}


def stream_event(event: ev.ResponseStreamEvent) -> tuple[str, dict[str, Any]]:
    """OpenAI's event type and JSON (``type`` and ``sequence_number`` first) for one stream event."""
    kind = event.WhichOneof("event")
    if kind is None:
        raise ValueError(f"stream event {event.sequence_number} has no event set")
    name, convert = EVENTS[kind]
    return name, {"type": name, "sequence_number": event.sequence_number, **convert(getattr(event, kind))}


def error_event(sequence_number: int, message: str, code: str | None, param: str | None) -> dict[str, Any]:
    """An ``error`` event the bridge writes itself when the gRPC stream fails after it began."""
    return {"type": "error", "sequence_number": sequence_number, "code": code, "message": message, "param": param}
