"""OpenAI Responses API requests -> ovserve.v1 ResponseService request messages.

The same three steps as ``requests`` (body, normalisation, field checks), for
the Responses body, plus the query strings of the ``/responses/{id}`` routes.
Normalisation moves OpenAI's polymorphic fields to the proto's typed
alternatives, as ``clients.polymorphic`` tables them: ``input`` list ->
``input_items``, a message's ``content`` list -> ``content_parts``, a
function_call_output's ``output`` list -> ``output_parts``, ``stop`` list ->
``stop_sequences``, ``tool_choice`` object -> ``named_tool_choice``. An item without ``type`` but with a ``role`` is a
message, as in OpenAI. Unknown item and part types are refused here, by path
(``input[2].type``), because which fields an item may carry depends on them.
"""

from __future__ import annotations

from typing import Any, TypeVar

from google.protobuf.descriptor import Descriptor

from clients.polymorphic import BY_OPENAI_NAME, TYPED_ALTERNATIVES, PolymorphicField, json_type
from clients.v1 import conversation_pb2, response_pb2
from rest_bridge import openai_parameters
from rest_bridge.requests import _without_nulls, bad_request, normalise_field, normalise_forms, to_message

# Fields of other OpenAI APIs that clients send here by mistake, refused with the Responses field to use.
# (The Responses API's own parameters without a contract field are in openai_parameters.RESPONSES.)
UNSUPPORTED = {
    "messages": "messages is not a Responses API field: send the conversation as input",
    "max_tokens": "max_tokens is not a Responses API field: use max_output_tokens",
    **{
        name: f"{name} is not a Responses API field (nor served here)" for name in ("modalities", "audio", "logit_bias")
    },
}

ITEM_TYPES = ("message", "function_call", "function_call_output", "reasoning", "compaction", "item_reference")
# Content part types each item field accepts (OpenAI's; the service checks the rest of the values).
MESSAGE_PARTS = ("input_text", "input_image", "input_file", "output_text", "refusal")
OUTPUT_PARTS = ("input_text", "input_image", "input_file")
REASONING_CONTENT_PARTS = ("reasoning_text",)
SUMMARY_PARTS = ("summary_text",)

ORDERS = ("asc", "desc")
MAX_LIMIT = 100


# ---- the body ----


def check_arguments(
    body: dict[str, Any], descriptor: Descriptor = response_pb2.CreateResponseRequest.DESCRIPTOR
) -> None:
    """Refuse top-level keys that are not arguments of the request ``descriptor`` (before normalisation)."""
    fields = descriptor.fields_by_name
    for key in body:
        if key in UNSUPPORTED:
            raise bad_request(key, UNSUPPORTED[key])
        if key not in fields or key in TYPED_ALTERNATIVES:
            raise bad_request(key, f"Unrecognized request argument supplied: {key}")


def normalise(
    body: dict[str, Any], descriptor: Descriptor = response_pb2.CreateResponseRequest.DESCRIPTOR
) -> dict[str, Any]:
    """The OpenAI Responses body in proto JSON form (a new dict; ``body`` is not changed)."""
    body = normalise_forms(_without_nulls(body), descriptor)
    if isinstance(body.get("conversation"), dict):  # OpenAI's object form {"id": "conv_..."}: the proto keeps the id
        body["conversation"] = _conversation_id(body["conversation"])
    if "input_items" in body:
        body["input_items"] = [_item(item, f"input[{i}]") for i, item in enumerate(body["input_items"])]
    return body


def _conversation_id(conversation: dict[str, Any]) -> Any:
    for key in sorted(set(conversation) - {"id"}):
        raise bad_request(f"conversation.{key}", f"conversation.{key}: unknown field")
    if "id" not in conversation:
        raise bad_request("conversation.id", "conversation.id: required")
    return conversation["id"]


def _item(item: Any, where: str) -> dict[str, Any]:
    """One OpenAI input item as proto InputItem JSON."""
    if not isinstance(item, dict):
        raise bad_request(where, f"{where} must be an input item object, got {json_type(item)}")
    item = _without_nulls(item)
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
    elif kind == "function_call_output":
        _parts_or_text(item, BY_OPENAI_NAME["output"], OUTPUT_PARTS, where)
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
    body = dict(body)  # OpenAI parameters without a contract field are taken out (or refused) first
    openai_parameters.take(body, openai_parameters.RESPONSES, bad_request)
    check_arguments(body)
    proto_json = normalise(body)
    stream = proto_json.get("stream", False)
    if not isinstance(stream, bool):
        raise bad_request("stream", f"stream: expected a boolean, got {json_type(stream)}")
    if stream:
        return to_message(proto_json, response_pb2.StreamResponseRequest), True
    return to_message(proto_json, response_pb2.CreateResponseRequest), False


def input_tokens_request(body: dict[str, Any]) -> response_pb2.CountResponseInputTokensRequest:
    """POST /responses/input_tokens: a Responses body (never streamed) whose input tokens to count."""
    if "stream" in body:
        raise bad_request("stream", "stream: not a field of input_tokens")
    request, _ = create_request(body)
    return response_pb2.CountResponseInputTokensRequest(request=request)


def compact_request(body: dict[str, Any]) -> response_pb2.CompactResponseRequest:
    """POST /responses/compact: the conversation to compact (model, input, previous_response_id, instructions)."""
    descriptor = response_pb2.CompactResponseRequest.DESCRIPTOR
    check_arguments(body, descriptor)
    return to_message(normalise(body, descriptor), response_pb2.CompactResponseRequest)


# ---- query strings of /responses/{id}, /responses/{id}/input_items ----

Query = dict[str, list[bytes]]  # tornado's request.query_arguments


def _strings(query: Query, allowed: set[str], repeated: set[str]) -> dict[str, list[str]]:
    """Decoded query values by name (``include[]`` is ``include``); unknown or repeated-once names are a 400."""
    out: dict[str, list[str]] = {}
    for raw_name, values in query.items():
        name = raw_name.removesuffix("[]") if raw_name.removesuffix("[]") in repeated else raw_name
        if name not in allowed:
            raise bad_request(name, f"Unrecognized query parameter supplied: {name}")
        decoded = [value.decode("utf-8", "replace") for value in values]
        if name not in repeated and len(decoded) + len(out.get(name, [])) > 1:
            raise bad_request(name, f"query parameter {name} is given more than once")
        out.setdefault(name, []).extend(decoded)
    return out


def _boolean(name: str, value: str) -> bool:
    lowered = value.lower()
    if lowered not in ("true", "false", "1", "0"):
        raise bad_request(name, f"{name} must be true or false, got {value!r}")
    return lowered in ("true", "1")


def _integer(name: str, value: str, low: int, high: int) -> int:
    try:
        number = int(value, 10)
    except ValueError:
        raise bad_request(name, f"{name} must be an integer, got {value!r}") from None
    if not low <= number <= high:
        raise bad_request(name, f"{name} must be between {low} and {high}, got {number}")
    return number


def get_request(
    response_id: str, query: Query
) -> response_pb2.GetResponseRequest | response_pb2.ResumeResponseStreamRequest:
    """GET /responses/{id}: a GetResponseRequest, or with ``stream=true`` a ResumeResponseStreamRequest."""
    values = _strings(query, {"stream", "starting_after", "include", "include_obfuscation"}, {"include"})
    stream = "stream" in values and _boolean("stream", values["stream"][0])
    if "include_obfuscation" in values:  # OpenAI's padding of streamed events: accepted, nothing to pad
        _boolean("include_obfuscation", values["include_obfuscation"][0])
    if stream:
        resume = response_pb2.ResumeResponseStreamRequest(response_id=response_id)
        if "starting_after" in values:
            resume.starting_after = _integer("starting_after", values["starting_after"][0], 0, 2**31 - 1)
        return resume
    if "starting_after" in values:
        raise bad_request("starting_after", "starting_after applies only with stream=true")
    return response_pb2.GetResponseRequest(response_id=response_id, include=values.get("include", []))


def input_items_request(response_id: str, query: Query) -> response_pb2.ListResponseInputItemsRequest:
    """GET /responses/{id}/input_items?after=&limit=&order=&include=."""
    return paged(response_pb2.ListResponseInputItemsRequest(response_id=response_id), query)


Paged = TypeVar("Paged", response_pb2.ListResponseInputItemsRequest, conversation_pb2.ListConversationItemsRequest)


def paged(request: Paged, query: Query) -> Paged:
    """``request`` (a list of items) with the page of ``?after=&limit=&order=&include=`` set, each checked."""
    values = _strings(query, {"after", "limit", "order", "include"}, {"include"})
    request.include.extend(values.get("include", []))
    if "after" in values:
        request.after = values["after"][0]
    if "limit" in values:
        request.limit = _integer("limit", values["limit"][0], 1, MAX_LIMIT)
    if "order" in values:
        order = values["order"][0]
        if order not in ORDERS:
            raise bad_request("order", f"order must be asc or desc, got {order!r}")
        request.order = order
    return request
