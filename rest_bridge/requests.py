"""OpenAI JSON request bodies -> ovserve.v1 request messages.

Three steps, each refusing bad input with a 400 that names the field:

1. ``parse_json_body``: content type, JSON syntax, a top-level object, and values the service can take
   (``json_values``: bounded nesting, finite numbers, no lone surrogates).
2. ``normalise_*``: OpenAI's polymorphic fields move to the proto's typed
   alternatives (``stop`` list -> ``stop_sequences``, ``content`` parts ->
   ``content_parts``, ``prompt`` lists -> ``prompts``, ``tool_choice`` object ->
   ``named_tool_choice``), as ``clients.polymorphic`` tables them; JSON nulls
   mean "not given".
3. ``check_fields``: every key is a field of the target message and every value
   has the field's JSON type, so ``json_format.ParseDict`` cannot fail and each
   refusal names the exact path (``messages[2].role``), in OpenAI's terms.

Value rules (ranges, roles, which fields combine) are the service's job; its
INVALID_ARGUMENT details come back through ``errors.from_rpc_error``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from clients import polymorphic
from clients.polymorphic import TYPED_ALTERNATIVES, FormError, PolymorphicField, is_token, json_type
from clients.v1 import chat_pb2, completion_pb2
from rest_bridge import legacy_functions, openai_parameters
from rest_bridge.errors import BridgeError, openai_param, openai_text
from rest_bridge.json_values import JsonValueError, check_values

JSON_MEDIA_TYPES = {"application/json"}
M = TypeVar("M", bound=Message)

_WELL_KNOWN_JSON = {  # well-known messages whose JSON form is not an object of fields
    "google.protobuf.Struct": dict,
    "google.protobuf.ListValue": list,
}
_INT_RANGES = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_FIXED32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SINT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
    FieldDescriptor.TYPE_FIXED64: (0, 2**64 - 1),
}
_FLOATS = {FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT}


def bad_request(param: str | None, message: str) -> BridgeError:
    """A 400 invalid_request_error naming ``param`` (an OpenAI path)."""
    return BridgeError(400, message, param=param)


# ---- 1. the body ----


def parse_json_body(body: bytes, content_type: str | None, max_depth: int) -> dict[str, Any]:
    """The request body as a JSON object; 415 for another content type, 400 for bad JSON."""
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    if media_type not in JSON_MEDIA_TYPES:
        raise BridgeError(
            415,
            f"Content-Type must be application/json, got {content_type or 'none'!r}",
            code="unsupported_media_type",
        )
    try:
        value = json.loads(body)
    except RecursionError:
        raise bad_request(None, f"the JSON body nests deeper than {max_depth} levels") from None
    except (UnicodeDecodeError, ValueError) as error:
        raise bad_request(None, f"the body is not valid JSON: {error}") from None
    if not isinstance(value, dict):
        raise bad_request(None, f"the body must be a JSON object, got {json_type(value)}")
    try:
        check_values(value, max_depth)
    except JsonValueError as error:
        raise bad_request(error.param, error.message) from None
    return value


# ---- 2. normalisation ----


def _without_nulls(body: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in body.items() if value is not None}


def normalise_forms(body: dict[str, Any], descriptor: Descriptor, where: str = "") -> dict[str, Any]:
    """``body`` (JSON of ``descriptor`` at OpenAI path ``where``) with its polymorphic fields in the proto's form.

    A typed alternative's own name in ``body`` is refused: a client writes the OpenAI name.
    """
    for field in polymorphic.fields_of(descriptor):
        if field.proto in body:
            path = f"{where}.{field.proto}" if where else field.proto
            raise bad_request(path, f"{path}: unknown field")
        normalise_field(field, body, where)
    return body


def normalise_field(field: PolymorphicField, body: dict[str, Any], where: str = "") -> None:
    """One polymorphic field of ``body`` in the proto's form; a 400 names it when it is in neither form."""
    try:
        field.normalise(body, where)
    except FormError as error:
        raise bad_request(error.param, error.message) from None


def _normalise_guided_json(body: dict[str, Any]) -> None:
    # vLLM accepts the schema as a JSON string too; the proto holds an object.
    if isinstance(body.get("guided_json"), str):
        try:
            body["guided_json"] = json.loads(body["guided_json"])
        except ValueError as error:
            raise bad_request("guided_json", f"guided_json is not a valid JSON string: {error}") from None


def normalise_chat(body: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI chat body in proto JSON form (a new dict; ``body`` is not changed)."""
    body = normalise_forms(_without_nulls(body), chat_pb2.CreateChatCompletionRequest.DESCRIPTOR)
    _normalise_guided_json(body)
    if isinstance(body.get("messages"), list):
        body["messages"] = [
            normalise_forms(_without_nulls(message), chat_pb2.ChatMessage.DESCRIPTOR, f"messages[{i}]")
            if isinstance(message, dict)
            else message
            for i, message in enumerate(body["messages"])
        ]
    return body


def normalise_completion(body: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI completions body in proto JSON form (a new dict; ``body`` is not changed)."""
    body = normalise_forms(_without_nulls(body), completion_pb2.CreateCompletionRequest.DESCRIPTOR)
    _normalise_guided_json(body)
    return body


# ---- 3. field and type checks ----


def check_arguments(body: dict[str, Any], descriptor: Descriptor) -> None:
    """Refuse top-level keys of the OpenAI body that are not request arguments (before normalisation)."""
    for key in body:
        if key not in descriptor.fields_by_name or key in TYPED_ALTERNATIVES:
            raise bad_request(key, f"Unrecognized request argument supplied: {key}")


def check_fields(proto_json: dict[str, Any], descriptor: Descriptor) -> None:
    """Refuse nested unknown keys and values of the wrong JSON type (after normalisation)."""
    _check_message(proto_json, descriptor, "")


def _check_message(value: dict[str, Any], descriptor: Descriptor, path: str) -> None:
    for key, item in value.items():
        where = f"{path}.{key}" if path else key
        field = descriptor.fields_by_name.get(key)
        if field is None:
            raise bad_request(openai_param(where), f"{openai_text(where)}: unknown field")
        if item is None:
            continue  # proto JSON: null leaves a field unset
        _check_field(item, field, where)


def _check_field(value: Any, field: FieldDescriptor, where: str) -> None:
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        _expect(value, dict, "an object", where)
        value_field = field.message_type.fields_by_name["value"]
        for key, item in value.items():
            _check_single(item, value_field, f"{where}.{key}")
    elif field.is_repeated:
        _expect(value, list, "an array", where)
        for i, item in enumerate(value):
            _check_single(item, field, f"{where}[{i}]")
    else:
        _check_single(value, field, where)


def _check_single(value: Any, field: FieldDescriptor, where: str) -> None:
    kind = field.type
    if kind == FieldDescriptor.TYPE_MESSAGE:
        name = field.message_type.full_name
        if name == "google.protobuf.Value":
            return  # any JSON value
        if name in _WELL_KNOWN_JSON:
            _expect(value, _WELL_KNOWN_JSON[name], "an object" if name.endswith("Struct") else "an array", where)
            return
        _expect(value, dict, "an object", where)
        _check_message(value, field.message_type, where)
    elif kind == FieldDescriptor.TYPE_STRING:
        _expect(value, str, "a string", where)
    elif kind == FieldDescriptor.TYPE_BOOL:
        _expect(value, bool, "a boolean", where)
    elif kind in _FLOATS:
        if isinstance(value, bool) or not isinstance(value, int | float):
            _wrong(value, "a number", where)
    elif kind in _INT_RANGES:
        if not is_token(value):
            _wrong(value, "an integer", where)
        low, high = _INT_RANGES[kind]
        if not low <= value <= high:
            raise bad_request(openai_param(where), f"{openai_text(where)}: {value} is out of range [{low}, {high}]")
    # enums and bytes do not occur in ovserve request messages; ParseDict checks them if they ever do


def _expect(value: Any, kind: type, name: str, where: str) -> None:
    if not isinstance(value, kind):
        _wrong(value, name, where)


def _wrong(value: Any, expected: str, where: str) -> None:
    raise bad_request(openai_param(where), f"{openai_text(where)}: expected {expected}, got {json_type(value)}")


# ---- translation ----


def _translate(
    body: dict[str, Any],
    normalise: Callable[[dict[str, Any]], dict[str, Any]],
    unary: type[Message],
    streaming: type[Message],
    parameters: dict[str, openai_parameters.Parameter],
) -> tuple[Message, bool]:
    body = dict(body)  # OpenAI parameters without a contract field are taken out (or refused) first
    if openai_parameters.take(body, parameters, bad_request):
        body = legacy_functions.to_tools(body, bad_request)
    check_arguments(body, unary.DESCRIPTOR)  # the unary and streaming requests have the same fields
    proto_json = normalise(body)
    stream = proto_json.get("stream", False)
    if not isinstance(stream, bool):
        raise bad_request("stream", f"stream: expected a boolean, got {json_type(stream)}")
    return to_message(proto_json, streaming if stream else unary), stream


def to_message(proto_json: dict[str, Any], message_class: type[M]) -> M:
    """``message_class`` from its proto JSON, every field and type checked first (400s name the field)."""
    check_fields(proto_json, message_class.DESCRIPTOR)
    lifted = lift_long_strings(proto_json, message_class.DESCRIPTOR)
    try:
        message = json_format.ParseDict(proto_json, message_class())
    except json_format.ParseError as error:  # a case check_fields does not cover: still a 400
        raise bad_request(None, openai_text(str(error))) from None
    for path, text in lifted:
        set_at(message, path, text)
    return message


# ---- long strings ----
# json_format checks every string for lone surrogates with a regex that holds the GIL: ~135 ms for a 5 MB
# prompt, during which the event loop stands still although the translation runs in a worker thread.
# parse_json_body has checked every string already (json_values), so long ones are set on the message
# directly (protobuf checks UTF-8 in C) and json_format sees a placeholder.
LONG_STRING = 64 * 1024
Path = tuple[str | int, ...]


def lift_long_strings(proto_json: dict[str, Any], descriptor: Descriptor, path: Path = ()) -> list[tuple[Path, str]]:
    """Replace the long strings of ``proto_json``'s string fields by "" and return them with their paths."""
    lifted: list[tuple[Path, str]] = []
    for key, value in proto_json.items():
        field = descriptor.fields_by_name.get(key)
        if field is None or value is None:
            continue
        items = list(enumerate(value)) if field.is_repeated and isinstance(value, list) else [(None, value)]
        for index, item in items:
            where = (*path, key) if index is None else (*path, key, index)
            if field.type == FieldDescriptor.TYPE_STRING and isinstance(item, str) and len(item) > LONG_STRING:
                lifted.append((where, item))
                if index is None:
                    proto_json[key] = ""
                else:
                    value[index] = ""
            elif _is_plain_message(field) and isinstance(item, dict):
                lifted += lift_long_strings(item, field.message_type, where)
    return lifted


def _is_plain_message(field: FieldDescriptor) -> bool:
    """A message field whose JSON is an object of its fields (not a map, Struct, Value or ListValue)."""
    return (
        field.type == FieldDescriptor.TYPE_MESSAGE
        and not field.message_type.GetOptions().map_entry
        and not field.message_type.full_name.startswith("google.protobuf.")
    )


def set_at(message: Message, path: Path, text: str) -> None:
    """Set the string field (or repeated string item) at ``path`` of ``message`` to ``text``."""
    *parents, last = path
    target: Any = message
    for step in parents:
        target = target[step] if isinstance(step, int) else getattr(target, step)
    if isinstance(last, int):
        target[last] = text
    else:
        setattr(target, last, text)


def uses_functions(body: dict[str, Any]) -> bool:
    """Whether a chat body uses the deprecated functions form (then the reply speaks it too)."""
    return "functions" in body or "function_call" in body


def chat_request(body: dict[str, Any]) -> tuple[chat_pb2.CreateChatCompletionRequest, bool]:
    """The chat request for an OpenAI body, and whether it streams (then it is a StreamChatCompletionRequest)."""
    return _translate(  # type: ignore[return-value]
        body,
        normalise_chat,
        chat_pb2.CreateChatCompletionRequest,
        chat_pb2.StreamChatCompletionRequest,
        openai_parameters.CHAT,
    )


def completion_request(body: dict[str, Any]) -> tuple[completion_pb2.CreateCompletionRequest, bool]:
    """The completions request for an OpenAI body, and whether it streams (then a StreamCompletionRequest)."""
    return _translate(  # type: ignore[return-value]
        body,
        normalise_completion,
        completion_pb2.CreateCompletionRequest,
        completion_pb2.StreamCompletionRequest,
        openai_parameters.COMPLETIONS,
    )
