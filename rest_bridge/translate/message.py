"""Checked proto JSON -> the request message, and the two flows every route's body goes through.

``message_from_body``: arguments checked, normalised, fields checked, the message built.
``streamable_from_body``: the same for a body with ``stream``, after OpenAI's parameters without a contract field
are taken out or refused (``openai_parameters``); it answers the unary or the streaming message.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping
from typing import Any, TypeVar

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from ovserve.clients.polymorphic import json_type, openai_text
from ovserve.rest_bridge import legacy_functions, openai_parameters
from ovserve.rest_bridge.translate.body import bad_request
from ovserve.rest_bridge.translate.proto_json import (
    INT_RANGES,
    NO_UNSUPPORTED,
    arguments,
    check_arguments,
    check_fields,
    without_nulls,
)

M = TypeVar("M", bound=Message)
Normalise = Callable[[dict[str, Any]], dict[str, Any]]  # a checked body -> its proto JSON (a new dict)


def message_from_body(
    body: dict[str, Any],
    message_class: type[M],
    normalise: Normalise = without_nulls,
    *,
    allowed: Container[str] | None = None,
    unsupported: Mapping[str, str] = NO_UNSUPPORTED,
) -> M:
    """``message_class`` for an OpenAI body: its keys checked (``allowed``, by default the message's arguments),
    ``normalise``d to proto JSON, then every field and type checked (400s name the field)."""
    check_arguments(body, arguments(message_class.DESCRIPTOR) if allowed is None else allowed, unsupported)
    return to_message(normalise(body), message_class)


def streamable_from_body(
    body: dict[str, Any],
    unary: type[Message],
    streaming: type[Message],
    parameters: dict[str, openai_parameters.Parameter],
    normalise: Normalise,
    *,
    unsupported: Mapping[str, str] = NO_UNSUPPORTED,
    functions_as_tools: bool = False,
) -> tuple[Message, bool]:
    """The request for a body that may ask to ``stream`` (then the ``streaming`` message, else ``unary``: the
    two have the same fields), and whether it streams.

    ``parameters``: OpenAI's parameters without a contract field, taken out (or refused) first;
    ``functions_as_tools``: a body in the deprecated functions form is read as tools (``legacy_functions``).
    """
    body = dict(body)
    legacy = openai_parameters.take(body, parameters, bad_request)
    if functions_as_tools:
        body = legacy_functions.to_tools(body, bad_request) if legacy else legacy_functions.with_assistant_calls(body)
    check_arguments(body, arguments(unary.DESCRIPTOR), unsupported)
    proto_json = normalise(body)
    stream = proto_json.get("stream", False)
    if not isinstance(stream, bool):
        raise bad_request("stream", f"stream: expected a boolean, got {json_type(stream)}")
    return to_message(proto_json, streaming if stream else unary), stream


def to_message(proto_json: dict[str, Any], message_class: type[M]) -> M:
    """``message_class`` from its proto JSON, every field and type checked first (400s name the field)."""
    lifted = lift_long_values(proto_json, message_class.DESCRIPTOR)
    check_fields(proto_json, message_class.DESCRIPTOR)
    try:
        message = json_format.ParseDict(proto_json, message_class())
    except json_format.ParseError as error:  # a case check_fields does not cover: still a 400
        raise bad_request(None, openai_text(str(error))) from None
    for path, value in lifted:
        set_at(message, path, value)
    return message


# ---- long strings and integer lists ----
# json_format checks every string for lone surrogates with a regex that holds the GIL: ~135 ms for a 5 MB
# prompt, during which the event loop stands still although the translation runs in a worker thread.
# parse_json_body has checked every string already (json_values), so long ones are set on the message
# directly (protobuf checks UTF-8 in C) and json_format sees a placeholder.
# A list of integers (token ids) is checked and converted an item at a time in Python by check_fields and
# json_format: 2,048 inputs of 1,000 token ids took the parser thread 3 s and doubled the event loop's wait for
# the GIL. A long one whose items are all integers in the field's range is set directly (one C call); any other
# is left to the item-by-item path and its errors.
LONG_STRING = 64 * 1024
LONG_LIST = 256
Path = tuple[str | int, ...]


def lift_long_values(proto_json: dict[str, Any], descriptor: Descriptor, path: Path = ()) -> list[tuple[Path, Any]]:
    """Replace the long strings of ``proto_json``'s string fields by "", and its long lists of valid integers by
    [], and return them with their paths."""
    lifted: list[tuple[Path, Any]] = []
    for key, value in proto_json.items():
        field = descriptor.fields_by_name.get(key)
        if field is None or value is None:
            continue
        if field.is_repeated and field.type in INT_RANGES:  # no strings or messages inside
            if isinstance(value, list) and len(value) > LONG_LIST and _integers_within(value, *INT_RANGES[field.type]):
                lifted.append(((*path, key), value))
                proto_json[key] = []
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
                lifted += lift_long_values(item, field.message_type, where)
    return lifted


def _integers_within(values: list[Any], low: int, high: int) -> bool:
    """Whether every item is an int (not a bool, not a float) from ``low`` to ``high``: C calls over the list."""
    return set(map(type, values)) == {int} and low <= min(values) and max(values) <= high


def _is_plain_message(field: FieldDescriptor) -> bool:
    """A message field whose JSON is an object of its fields (not a map, Struct, Value or ListValue)."""
    return (
        field.type == FieldDescriptor.TYPE_MESSAGE
        and not field.message_type.GetOptions().map_entry
        and not field.message_type.full_name.startswith("google.protobuf.")
    )


def set_at(message: Message, path: Path, value: str | list[int]) -> None:
    """Set the string field (or repeated string item) at ``path`` of ``message`` to ``value``, or fill the repeated
    integer field there with it."""
    *parents, last = path
    target: Any = message
    for step in parents:
        target = target[step] if isinstance(step, int) else getattr(target, step)
    if isinstance(value, list):
        getattr(target, str(last)).extend(value)
    elif isinstance(last, int):
        target[last] = value
    else:
        setattr(target, last, value)
