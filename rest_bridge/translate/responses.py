"""OpenAI Responses API requests -> ovserve.v1 ResponseService request messages.

The same flow as every body (``message``), for the Responses body, plus the query strings of the
``/responses/{id}`` routes. Normalisation moves OpenAI's polymorphic fields to the proto's typed
alternatives, as ``ovserve.clients.polymorphic`` tables them: ``input`` list -> ``input_items``, a message's ``content``
list -> ``content_parts``, a function_call_output's ``output`` list -> ``output_parts``, ``stop`` list ->
``stop_sequences``, ``tool_choice`` object -> ``named_tool_choice``. An item without ``type`` but with a ``role``
is a message, as in OpenAI. Unknown item and part types are refused here, by path (``input[2].type``), because
which fields an item may carry depends on them. Conversations read their items the same way (``proto_input_item``).
"""

from __future__ import annotations

from typing import Any

from google.protobuf.descriptor import Descriptor

from ovserve.clients.polymorphic import BY_OPENAI_NAME, TYPED_ALTERNATIVES, PolymorphicField, json_type
from ovserve.clients.v1 import response_pb2
from ovserve.rest_bridge import openai_parameters
from ovserve.rest_bridge.translate.body import bad_request
from ovserve.rest_bridge.translate.message import message_from_body, streamable_from_body
from ovserve.rest_bridge.translate.proto_json import normalise_field, normalise_forms, without_nulls
from ovserve.rest_bridge.translate.query import Query, boolean, integer, paged, query_strings

# Fields of other OpenAI APIs that clients send here by mistake, refused with the Responses field to use.
# (The Responses API's own parameters without a contract field are in openai_parameters.RESPONSES.)
UNSUPPORTED = {
    "messages": "messages is not a Responses API field: send the conversation as input",
    "max_tokens": "max_tokens is not a Responses API field: use max_output_tokens",
    **{
        name: f"{name} is not a Responses API field (nor served here)" for name in ("modalities", "audio", "logit_bias")
    },
}

ITEM_TYPES = (
    "message", "function_call", "function_call_output", "reasoning", "compaction", "item_reference",
    "mcp_approval_response", "mcp_list_tools", "mcp_call", "mcp_approval_request", "custom_tool_call",
    "custom_tool_call_output",
)  # fmt: skip
# An mcp tool's fields that are a list or a string in OpenAI's JSON and an object otherwise -> the proto field of
# the object form.
MCP_OBJECT_FORMS = {"allowed_tools": "allowed_tools_filter", "require_approval": "require_approval_filter"}
# Content part types each item field accepts (OpenAI's; the service checks the rest of the values).
MESSAGE_PARTS = ("input_text", "input_image", "input_file", "output_text", "refusal")
OUTPUT_PARTS = ("input_text", "input_image", "input_file")
REASONING_CONTENT_PARTS = ("reasoning_text",)
SUMMARY_PARTS = ("summary_text",)


# ---- the body ----


def normalise(
    body: dict[str, Any], descriptor: Descriptor = response_pb2.CreateResponseRequest.DESCRIPTOR
) -> dict[str, Any]:
    """The OpenAI Responses body in proto JSON form (a new dict; ``body`` is not changed)."""
    body = normalise_forms(without_nulls(body), descriptor)
    if isinstance(body.get("conversation"), dict):  # OpenAI's object form {"id": "conv_..."}: the proto keeps the id
        body["conversation"] = _conversation_id(body["conversation"])
    if "input_items" in body:
        body["input_items"] = [proto_input_item(item, f"input[{i}]") for i, item in enumerate(body["input_items"])]
    if isinstance(body.get("tools"), list):
        body["tools"] = [_custom_format(_mcp_forms(tool)) for tool in body["tools"]]
    return body


def _custom_format(tool: Any) -> Any:
    """A custom tool's grammar format in the contract's nested form: the Responses API writes it flat
    (``{"type": "grammar", "syntax", "definition"}``), chat nests the two under ``grammar``, as the contract does."""
    fmt = tool.get("format") if isinstance(tool, dict) and tool.get("type") == "custom" else None
    if not isinstance(fmt, dict) or fmt.get("type") != "grammar" or "grammar" in fmt:
        return tool
    flat = {key: fmt[key] for key in ("syntax", "definition") if key in fmt}
    rest = {key: value for key, value in fmt.items() if key not in flat}
    return {**tool, "format": {**rest, "grammar": flat}}


def _mcp_forms(tool: Any) -> Any:
    """An mcp tool with the object forms of allowed_tools and require_approval moved to their proto fields."""
    if not isinstance(tool, dict) or tool.get("type") != "mcp":
        return tool
    tool = without_nulls(tool)
    for name, proto in MCP_OBJECT_FORMS.items():
        if isinstance(tool.get(name), dict):
            tool[proto] = tool.pop(name)
    if isinstance(tool.get("allowed_tools_filter"), dict):  # proto JSON has no nulls inside a message
        tool["allowed_tools_filter"] = without_nulls(tool["allowed_tools_filter"])
    return tool


def _conversation_id(conversation: dict[str, Any]) -> Any:
    for key in sorted(set(conversation) - {"id"}):
        raise bad_request(f"conversation.{key}", f"conversation.{key}: unknown field")
    if "id" not in conversation:
        raise bad_request("conversation.id", "conversation.id: required")
    return conversation["id"]


def proto_input_item(item: Any, where: str) -> dict[str, Any]:
    """One OpenAI input item (at OpenAI path ``where``) as proto InputItem JSON."""
    if not isinstance(item, dict):
        raise bad_request(where, f"{where} must be an input item object, got {json_type(item)}")
    item = without_nulls(item)
    for name in sorted(TYPED_ALTERNATIVES & item.keys()):  # a client writes OpenAI's names, not the proto's
        raise bad_request(f"{where}.{name}", f"{where}.{name}: unknown field")
    kind = item.get("type")
    if kind is None:
        if "role" not in item:
            raise bad_request(f"{where}.type", f"{where}: an input item needs a type (or a role, for a message)")
        kind = item["type"] = "message"
    if kind not in ITEM_TYPES:
        shown = repr(kind) if isinstance(kind, str) else json_type(kind)
        raise bad_request(
            f"{where}.type", f"{where}.type: unknown input item type {shown}; expected one of {', '.join(ITEM_TYPES)}"
        )
    if kind == "message":
        _parts_or_text(item, BY_OPENAI_NAME["content"], MESSAGE_PARTS, where)
    elif kind in ("function_call_output", "custom_tool_call_output"):
        _parts_or_text(item, BY_OPENAI_NAME["output"], OUTPUT_PARTS, where)
    elif kind == "mcp_list_tools" and isinstance(item.get("tools"), list):  # OpenAI writes null annotations
        item["tools"] = [without_nulls(tool) if isinstance(tool, dict) else tool for tool in item["tools"]]
    elif kind == "reasoning":  # a reasoning item's content is always a list of parts
        content = BY_OPENAI_NAME["content"]
        if "content" in item:
            item[content.proto] = _parts(item.pop("content"), REASONING_CONTENT_PARTS, f"{where}.content")
        if "summary" in item:
            item["summary"] = _parts(item["summary"], SUMMARY_PARTS, f"{where}.summary")
    return item


def _parts_or_text(item: dict[str, Any], field: PolymorphicField, kinds: tuple[str, ...], where: str) -> None:
    """The item's polymorphic ``field``: a string stays, a list of parts (of ``kinds``) moves to its alternative."""
    normalise_field(field, item, where)
    if field.proto in item:
        _parts(item[field.proto], kinds, field.path(where))


def _parts(parts: Any, kinds: tuple[str, ...], where: str) -> list[Any]:
    if not isinstance(parts, list):
        raise bad_request(where, f"{where} must be a list of content parts, got {json_type(parts)}")
    for i, part in enumerate(parts):
        if not isinstance(part, dict):
            raise bad_request(f"{where}[{i}]", f"{where}[{i}] must be a content part object, got {json_type(part)}")
        kind = part.get("type")
        if kind not in kinds:
            shown = "missing" if kind is None else repr(kind) if isinstance(kind, str) else json_type(kind)
            raise bad_request(
                f"{where}[{i}].type", f"{where}[{i}].type: {shown} is not a part type here; expected {', '.join(kinds)}"
            )
    return parts


def create_request(
    body: dict[str, Any],
) -> tuple[response_pb2.CreateResponseRequest | response_pb2.StreamResponseRequest, bool]:
    """The request for an OpenAI Responses body, and whether it streams (then a StreamResponseRequest)."""
    return streamable_from_body(  # type: ignore[return-value]
        body,
        response_pb2.CreateResponseRequest,
        response_pb2.StreamResponseRequest,
        openai_parameters.RESPONSES,
        normalise,
        unsupported=UNSUPPORTED,
    )


def input_tokens_request(body: dict[str, Any]) -> response_pb2.CountResponseInputTokensRequest:
    """POST /responses/input_tokens: a Responses body (never streamed) whose input tokens to count."""
    if "stream" in body:
        raise bad_request("stream", "stream: not a field of input_tokens")
    request, _ = create_request(body)
    return response_pb2.CountResponseInputTokensRequest(request=request)


def compact_request(body: dict[str, Any]) -> response_pb2.CompactResponseRequest:
    """POST /responses/compact: the conversation to compact (model, input, previous_response_id, instructions)."""
    message_class = response_pb2.CompactResponseRequest
    return message_from_body(
        body, message_class, lambda checked: normalise(checked, message_class.DESCRIPTOR), unsupported=UNSUPPORTED
    )


# ---- query strings of /responses/{id}, /responses/{id}/input_items ----


def get_request(
    response_id: str, query: Query
) -> response_pb2.GetResponseRequest | response_pb2.ResumeResponseStreamRequest:
    """GET /responses/{id}: a GetResponseRequest, or with ``stream=true`` a ResumeResponseStreamRequest."""
    values = query_strings(query, {"stream", "starting_after", "include", "include_obfuscation"}, {"include"})
    stream = "stream" in values and boolean("stream", values["stream"][0])
    if "include_obfuscation" in values:  # OpenAI's padding of streamed events: accepted, nothing to pad
        boolean("include_obfuscation", values["include_obfuscation"][0])
    if stream:
        resume = response_pb2.ResumeResponseStreamRequest(response_id=response_id)
        if "starting_after" in values:
            resume.starting_after = integer("starting_after", values["starting_after"][0], 0, 2**31 - 1)
        return resume
    if "starting_after" in values:
        raise bad_request("starting_after", "starting_after applies only with stream=true")
    return response_pb2.GetResponseRequest(response_id=response_id, include=values.get("include", []))


def input_items_request(response_id: str, query: Query) -> response_pb2.ListResponseInputItemsRequest:
    """GET /responses/{id}/input_items?after=&limit=&order=&include=."""
    return paged(response_pb2.ListResponseInputItemsRequest(response_id=response_id), query)
