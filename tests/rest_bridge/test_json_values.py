"""The bridge's checks of parsed JSON values (ovserve.rest_bridge.json_values) and the depth bound they keep.

The bound must hold below protobuf's decoder in the service: every body the
bridge lets through has to decode there, or the caller gets an error that
names no field. The test below fills each google.protobuf.Struct field of every
request message as deep as the bridge allows (plus a margin for OpenAI shapes
that the bridge nests one level deeper in the proto) and decodes it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from ovserve.clients.v1 import chat_pb2, completion_pb2, response_pb2
from ovserve.rest_bridge.config import BridgeSettings
from ovserve.rest_bridge.json_values import JsonValueError, check_values

MAX_DEPTH = BridgeSettings().max_json_depth
MARGIN = 2  # proto paths may nest deeper than the OpenAI body (Responses' flat tools gain a "function" level)
REQUESTS: list[type[Message]] = [
    chat_pb2.CreateChatCompletionRequest,
    chat_pb2.StreamChatCompletionRequest,
    completion_pb2.CreateCompletionRequest,
    completion_pb2.StreamCompletionRequest,
    response_pb2.CreateResponseRequest,
    response_pb2.StreamResponseRequest,
]


def struct_paths(descriptor: Descriptor, seen: tuple[str, ...] = ()) -> Iterator[list[tuple[str, bool]]]:
    """Every path (field name, repeated) from ``descriptor`` to a google.protobuf.Struct field."""
    for field in descriptor.fields:
        if field.type != FieldDescriptor.TYPE_MESSAGE or field.message_type.GetOptions().map_entry:
            continue
        step = [(field.json_name, field.is_repeated)]
        name = field.message_type.full_name
        if name == "google.protobuf.Struct":
            yield step
        elif not name.startswith("google.protobuf.") and name not in seen:
            for rest in struct_paths(field.message_type, (*seen, name)):
                yield step + rest


def body_with(path: list[tuple[str, bool]], value: Any) -> tuple[dict[str, Any], int]:
    """A proto-JSON body holding ``value`` at ``path``, and the depth at which ``value`` sits (the body is 1)."""
    for name, repeated in reversed(path):
        value = {name: [value] if repeated else value}
    return value, 1 + sum(2 if repeated else 1 for _, repeated in path)


def nested(levels: int, kind: str) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = {"a": value} if kind == "object" else [value]
    return value


CASES = [(request, path) for request in REQUESTS for path in struct_paths(request.DESCRIPTOR)]


@pytest.mark.parametrize("kind", ["object", "list"])
@pytest.mark.parametrize(
    ("request_type", "path"), CASES, ids=[f"{r.__name__}.{'.'.join(n for n, _ in p)}" for r, p in CASES]
)
def test_every_body_the_bridge_lets_through_decodes_in_the_service(
    request_type: type[Message], path: list[tuple[str, bool]], kind: str
) -> None:
    _, depth = body_with(path, {})
    inner = MAX_DEPTH + MARGIN - depth  # levels inside the Struct that bring the body to the bound
    body, _ = body_with(path, {"x": nested(inner, kind)})
    message = json_format.ParseDict(body, request_type(), ignore_unknown_fields=False)
    decoded = request_type.FromString(message.SerializeToString())  # raises DecodeError past protobuf's limit
    assert decoded == message


def test_the_struct_paths_cover_every_api() -> None:
    assert len({request for request, _ in CASES}) == len(REQUESTS)
    names = {".".join(name for name, _ in path) for _, path in CASES}
    assert {"chatTemplateKwargs", "guidedJson"} <= names


def refusal(raw: str, max_depth: int = MAX_DEPTH) -> tuple[str | None, str] | None:
    try:
        check_values(json.loads(raw), max_depth)
    except JsonValueError as error:
        return error.param, error.message
    return None


@pytest.mark.parametrize(
    ("raw", "param"),
    [
        ('{"a": [1, {"b": NaN}]}', "a[1].b"),
        ('{"a": {"b": -Infinity}}', "a.b"),
        ('{"t": 1e309}', "t"),
        ('{"k\\ud800": 1}', "k\\ud800"),
        ('{"m": [{"content": "x\\udc00"}]}', "m[0].content"),
        ('{"m": ["\\udc00\\ud800"]}', "m[0]"),
        ('{"odd key": {"x": NaN}}', "odd key.x"),
        ('{"a": ' + "[" * 32 + "]" * 32 + "}", "a" + "[0]" * 31),
    ],
)
def test_the_first_bad_value_is_named_by_its_path(raw: str, param: str) -> None:
    found = refusal(raw)
    assert found is not None and found[0] == param
    assert found[1].startswith(param + ": ")


@pytest.mark.parametrize(
    "raw",
    [
        '{"emoji": "\\ud83d\\ude00", "n": 1e308, "neg": -0.0, "big": 123456789012345678901234567890}',
        '{"a": ' + "[" * 31 + "]" * 31 + "}",
        '{"a": {"b": {"c": []}}}',
        "{}",
    ],
)
def test_good_values_pass(raw: str) -> None:
    assert refusal(raw) is None


def test_a_wide_body_is_walked_without_recursion_or_paths() -> None:
    body = {"a": list(range(200_000)), "b": [{"c": "x"}] * 50_000, "z": float("nan")}
    assert refusal(json.dumps(body)) == ("z", "z: NaN is not a finite number (JSON numbers are finite)")


@pytest.mark.parametrize(
    ("values", "param"),
    [
        ([1.5] * 100 + [float("inf")], "input[100]"),  # a long array of numbers, checked at once: the culprit found
        ([7] * 100 + [float("nan"), 1], "input[100]"),
        ([1] * 100 + ["\ud800"], "input[100]"),  # not numbers only: walked item by item
        ([[1] * 100, [2.0] * 99 + [float("-inf")]], "input[1][99]"),
    ],
)
def test_long_arrays_of_numbers_are_still_refused_at_their_culprit(values: list[Any], param: str) -> None:
    with pytest.raises(JsonValueError) as caught:
        check_values({"input": values}, MAX_DEPTH)
    assert caught.value.param == param


def test_long_arrays_of_finite_numbers_pass() -> None:
    check_values({"input": [list(range(1000)), [0.5] * 1000, [1, 2.5] * 100, [True] * 100]}, MAX_DEPTH)
