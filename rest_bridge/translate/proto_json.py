"""A parsed OpenAI body -> checked proto JSON: the arguments a request takes, polymorphic forms, JSON types.

``check_arguments`` refuses top-level keys a request does not take (before normalisation, in the client's
names); ``normalise_forms`` moves OpenAI's polymorphic fields to the proto's typed alternatives, as
``ovserve.clients.polymorphic`` tables them (``stop`` list -> ``stop_sequences``, ``content`` parts ->
``content_parts``,
``prompt`` lists -> ``prompts``, ``tool_choice`` object -> ``named_tool_choice``), JSON nulls meaning "not given";
``check_fields`` checks every nested key and JSON type, so ``json_format.ParseDict`` cannot fail and each refusal
names the exact path (``messages[2].role``), in OpenAI's terms.

Value rules (ranges, roles, which fields combine) are the service's job; its INVALID_ARGUMENT details come back
through ``errors.from_rpc_error``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Container, Iterable, Mapping
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from ovserve.clients import polymorphic
from ovserve.clients.polymorphic import (
    TYPED_ALTERNATIVES,
    FormError,
    PolymorphicField,
    is_token,
    json_type,
    openai_param,
    openai_text,
)
from ovserve.rest_bridge.translate.body import bad_request

NO_UNSUPPORTED: Mapping[str, str] = {}

_WELL_KNOWN_JSON = {  # well-known messages whose JSON form is not an object of fields
    "google.protobuf.Struct": dict,
    "google.protobuf.ListValue": list,
}
INT_RANGES = {  # an integer field type -> the values it holds
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
FLOAT32_MAX = 3.4028234663852886e38  # the largest finite 32-bit float


# ---- the request's arguments ----


@functools.cache
def arguments(descriptor: Descriptor) -> frozenset[str]:
    """The top-level keys a client may send for ``descriptor``: its fields in OpenAI's names (no typed alternative)."""
    return frozenset(descriptor.fields_by_name) - TYPED_ALTERNATIVES


def check_arguments(
    keys: Iterable[str], allowed: Container[str], unsupported: Mapping[str, str] = NO_UNSUPPORTED
) -> None:
    """Refuse the first of ``keys`` that is not ``allowed``: with its ``unsupported`` message if it has one
    (a field of another API, naming the one to use), else as an unrecognized argument."""
    for key in keys:
        if key in unsupported:
            raise bad_request(key, unsupported[key])
        if key not in allowed:
            raise bad_request(key, f"Unrecognized request argument supplied: {key}")


# ---- normalisation ----


def without_nulls(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` without its null values (a new dict): JSON null means "not given"."""
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


# ---- nested keys and JSON types ----


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
        # ParseDict refuses these too, without naming the field (1e309 in JSON reads as infinity).
        if not math.isfinite(value):
            raise bad_request(openai_param(where), f"{openai_text(where)}: {value} is not a finite number")
        if kind == FieldDescriptor.TYPE_FLOAT and abs(value) > FLOAT32_MAX:
            raise bad_request(openai_param(where), f"{openai_text(where)}: {value} is out of a 32-bit float's range")
    elif kind in INT_RANGES:
        if not is_token(value):
            _wrong(value, "an integer", where)
        low, high = INT_RANGES[kind]
        if not low <= value <= high:
            raise bad_request(openai_param(where), f"{openai_text(where)}: {value} is out of range [{low}, {high}]")
    # enums and bytes do not occur in ovserve request messages; ParseDict checks them if they ever do


def _expect(value: Any, kind: type, name: str, where: str) -> None:
    if not isinstance(value, kind):
        _wrong(value, name, where)


def _wrong(value: Any, expected: str, where: str) -> None:
    raise bad_request(openai_param(where), f"{openai_text(where)}: expected {expected}, got {json_type(value)}")
