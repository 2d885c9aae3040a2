"""JSON Schema -> compact EBNF: each keyword, refusals naming the keyword, and the grammars on tiny-chat.

The grammars are compiled and sampled by the engine's own grammar compiler (the bundled model through
the served model's grammar checker, ovserve.service.engine.grammar, and a plain LLMPipeline); every sample must parse,
validate
and hold no whitespace other than one space after ':' or ','.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import re
from typing import Any

import jsonschema
import openvino_genai as ov_genai
import pytest

from ovserve.service.engine import OutputConstraint
from ovserve.service.engine.grammar import GrammarChecker
from ovserve.service.models import BUNDLED_MODEL, BUNDLED_MODELS_DIR
from ovserve.service.structured.json_grammar import (
    MAX_INTEGER,
    SchemaError,
    check_size,
    integer_range,
    pattern_expression,
    schema_grammar,
)
from ovserve.service.structured.limits import (
    MAX_ALTERNATIVES,
    MAX_OBJECT_PROPERTIES,
    MAX_PATTERN_LENGTH,
    MAX_REPEAT,
    MAX_SCHEMA_BYTES,
    MAX_SCHEMA_DEPTH,
)
from tests.service.api.ebnf import to_regex

SCHEMAS: dict[str, Any] = {
    "any": {},
    "object": {"type": "object"},
    "optional-and-required": {
        "type": "object",
        "properties": {
            "a": {"type": "string", "maxLength": 5},
            "b": {"type": "integer", "minimum": -3, "maximum": 250},
            "c": {"type": "boolean"},
            "d": {"type": "null"},
        },
        "required": ["b"],
    },
    "all-optional": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"const": [1, {"k": None}]}}},
    "map": {"type": "object", "additionalProperties": {"type": "integer", "maximum": 9}},
    "closed-empty": {"type": "object", "additionalProperties": False},
    "arrays": {
        "type": "object",
        "properties": {
            "tuple": {"type": "array", "prefixItems": [{"type": "integer"}, {"enum": ["a", "b"]}], "items": False},
            "bounded": {"type": "array", "items": {"type": "string", "maxLength": 3}, "minItems": 2, "maxItems": 3},
        },
        "required": ["tuple", "bounded"],
    },
    "strings": {
        "type": "object",
        "properties": {
            "code": {"type": "string", "pattern": "^[A-Z]{2}-\\d{3}$"},
            "quote": {"type": "string", "pattern": 'say "(hi|yo)"'},
            "day": {"type": "string", "format": "date"},
            "at": {"type": "string", "format": "date-time"},
            "id": {"type": "string", "format": "uuid"},
            "short": {"type": "string", "minLength": 2, "maxLength": 4},
        },
        "required": ["code", "quote", "day", "at", "id", "short"],
    },
    "numbers": {
        "type": "object",
        "properties": {
            "ratio": {"type": "number", "minimum": 0.5, "maximum": 3},
            "negative": {"type": "integer", "exclusiveMaximum": 0, "exclusiveMinimum": -1000},
            "free": {"type": "number"},
        },
        "required": ["ratio", "negative", "free"],
    },
    "unions": {
        "type": "object",
        "properties": {
            "either": {"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 4}]},
            "one": {"oneOf": [{"const": "x"}, {"type": "boolean"}]},
            "list": {"type": ["integer", "null"]},
            "maybe": {"type": "string", "maxLength": 2, "nullable": True},
            "wrapped": {"allOf": [{"$ref": "#/$defs/point"}], "description": "pydantic's form"},
        },
        "required": ["either", "one", "list", "maybe", "wrapped"],
        "$defs": {"point": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}},
    },
    "recursive": {
        "$ref": "#/definitions/node",
        "definitions": {
            "node": {
                "type": "object",
                "properties": {
                    "v": {"type": "integer"},
                    "next": {"anyOf": [{"$ref": "#/definitions/node"}, {"type": "null"}]},
                },
                "required": ["v", "next"],
            }
        },
    },
    "draft-07-tuple": {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "array",
        "items": [{"type": "boolean"}, {"type": "null"}],
        "additionalItems": False,
    },
    "top-level-array": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 4},
}

REFUSED = [
    ({"type": "array", "uniqueItems": True}, ("uniqueItems",)),
    ({"type": "integer", "multipleOf": 2}, ("multipleOf",)),
    ({"type": "object", "patternProperties": {"^a": {}}}, ("patternProperties",)),
    ({"type": "object", "properties": {"a": {"not": {"type": "string"}}}}, ("properties", "a", "not")),
    ({"allOf": [{"type": "string"}, {"maxLength": 3}]}, ("allOf",)),
    ({"$ref": "https://example.com/s.json"}, ("$ref",)),
    ({"$ref": "#/$defs/missing"}, ("$ref",)),
    ({"type": "string", "pattern": "(?=a)b"}, ("pattern",)),
    ({"type": "string", "pattern": "(a)\\1"}, ("pattern",)),
    ({"type": "string", "pattern": "a\\bb"}, ("pattern",)),
    ({"type": "string", "pattern": "a+", "maxLength": 3}, ("pattern",)),
    ({"type": "integer", "minimum": 5, "maximum": 4}, ()),
    ({"type": "object", "required": ["a"], "additionalProperties": False}, ("required",)),
    ({"type": "array", "minItems": 3, "maxItems": 2}, ("minItems",)),
    ({"type": "object", "properties": {"a": False}}, ("properties", "a")),
]


@functools.cache
def checker() -> GrammarChecker:
    return GrammarChecker(BUNDLED_MODELS_DIR / BUNDLED_MODEL, timeout=60)


def grammar_error(kind: str, value: str) -> str | None:
    """What the engine's grammar checker says of a constraint (None: it compiles)."""
    return asyncio.run(checker().check(OutputConstraint(kind, value, "schema")))


@functools.cache
def pipeline() -> ov_genai.LLMPipeline:
    return ov_genai.LLMPipeline(str(BUNDLED_MODELS_DIR / BUNDLED_MODEL), "CPU")


def sample(grammar: str, seed: int) -> str:
    config = ov_genai.GenerationConfig(
        max_new_tokens=600,
        do_sample=seed > 0,
        temperature=1.0,
        rng_seed=seed,
        structured_output_config=ov_genai.StructuredOutputConfig(grammar=grammar),
    )
    return str(pipeline().generate("Write JSON.", config))


def assert_compact(text: str) -> None:
    """No whitespace outside strings but one space after ':' or ','."""
    outside = re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)
    assert re.fullmatch(r"(?:[^\s]|(?<=[:,]) (?! ))*", outside), text


@pytest.mark.parametrize("name", SCHEMAS)
def test_grammar_compiles_and_samples_validate(name: str) -> None:
    schema = SCHEMAS[name]
    grammar = schema_grammar(schema)
    assert grammar_error("grammar", grammar) is None
    for seed in (0, 1, 2):
        text = sample(grammar, seed)
        jsonschema.validate(json.loads(text), schema)
        assert_compact(text)


@pytest.mark.parametrize(("schema", "path"), REFUSED, ids=[json.dumps(s) for s, _ in REFUSED])
def test_unenforceable_schemas_are_refused_naming_the_keyword(schema: dict[str, Any], path: tuple[Any, ...]) -> None:
    with pytest.raises(SchemaError) as raised:
        schema_grammar(schema)
    assert raised.value.path == path, raised.value.message


def test_annotations_are_ignored() -> None:
    plain = {"type": "string", "maxLength": 3}
    annotated = {**plain, "title": "t", "description": "d", "default": "x", "examples": ["y"], "format": "email"}
    assert schema_grammar(annotated) == schema_grammar(plain)


def test_object_members_keep_schema_order_and_optional_ones_are_optional() -> None:
    schema = {"type": "object", "properties": {"b": {"type": "null"}, "a": {"type": "null"}}, "required": ["a"]}
    grammar = schema_grammar(schema)
    assert grammar.index('"\\"b\\""') < grammar.index('"\\"a\\""')


@pytest.mark.parametrize(("low", "high"), [(0, 120), (-5, 23), (7, 7), (-1000, -1), (95, 1105), (0, 9), (10, 99)])
def test_integer_range_is_exact(low: int, high: int) -> None:
    # Digit-only EBNF reads as a regex once the literal quotes and spaces go.
    expression = integer_range(low, high)
    regex = re.compile(re.sub(r'"([-0-9]+)"', r"\1", expression).replace(" ", ""))
    for value in range(low - 50, high + 50):
        assert bool(regex.fullmatch(str(value))) == (low <= value <= high), value
    assert not regex.fullmatch("-0") and not regex.fullmatch("007")


def test_integers_have_at_most_15_digits() -> None:
    regex = re.compile(re.sub(r'"([-0-9]+)"', r"\1", integer_range(0, MAX_INTEGER)).replace(" ", ""))
    assert regex.fullmatch(str(MAX_INTEGER)) and not regex.fullmatch(str(MAX_INTEGER + 1))


def test_pattern_classes_leave_out_what_json_escapes() -> None:
    assert pattern_expression('[a"\\\\]') == "[a]"
    assert pattern_expression("^x$") == '"x"'
    with pytest.raises(SchemaError):
        pattern_expression('["\\\\]')


# ---- size: linear in the schema, and bounded ----


def optional_strings(n: int) -> dict[str, Any]:
    return {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(n)}}


def nested(n: int, wrap: Any) -> Any:
    schema: Any = {"type": "integer"}
    for _ in range(n):
        schema = wrap(schema)
    return schema


GROWTH = {  # shapes that grew quadratically or exponentially before, by size parameter n
    "optional-properties": optional_strings,
    "required-after-optional": lambda n: {**optional_strings(n), "required": [f"p{n - 1}"]},
    "nested-objects": lambda n: nested(n, lambda s: {"type": "object", "properties": {"a": s, "b": {}}}),
    "nested-anyof": lambda n: nested(n, lambda s: {"anyOf": [s, {"type": "null"}, {"type": "string"}]}),
    "nested-arrays": lambda n: nested(n, lambda s: {"type": "array", "items": s, "maxItems": 3}),
    "nested-maps": lambda n: nested(n, lambda s: {"type": "object", "additionalProperties": s}),
    "ref-spellings": lambda n: {
        "type": "array",
        "prefixItems": [{"$ref": "#/$defs/big" + "/" * i} for i in range(n)],
        "$defs": {"big": optional_strings(n)},
    },
}


@pytest.mark.parametrize("shape", GROWTH)
def test_grammar_grows_linearly(shape: str) -> None:
    build = GROWTH[shape]
    small, large = len(schema_grammar(build(5))), len(schema_grammar(build(10)))
    assert large < 2.2 * small, (small, large)


def test_1000_optional_properties_stay_small() -> None:
    assert len(schema_grammar(optional_strings(1000))) < 120_000  # was 11 MB


def test_optional_members_accept_exactly_ordered_subsets_with_the_required_ones() -> None:
    names = ["a", "b", "c", "d", "e"]
    for required in ([], ["c"], ["a"], ["e"], ["b", "d"], names):
        schema = {"type": "object", "properties": {n: {"type": "null"} for n in names}, "required": required}
        grammar = schema_grammar(schema)
        regex = re.compile(to_regex(grammar))
        for size in range(len(names) + 1):
            for keys in itertools.permutations(names, size):
                text = json.dumps(dict.fromkeys(keys), separators=(", ", ": "))
                valid = list(keys) == sorted(keys) and set(required) <= set(keys)
                assert bool(regex.fullmatch(text)) == valid, (required, text)
        assert grammar_error("grammar", grammar) is None


LIMITED = [  # (schema, the path refused): one case per limit
    ({"type": "object", "properties": {"d": {"description": "x" * MAX_SCHEMA_BYTES}}}, ()),
    (nested(MAX_SCHEMA_DEPTH, lambda s: {"type": "array", "items": s}), ("items",) * MAX_SCHEMA_DEPTH),
    (optional_strings(MAX_OBJECT_PROPERTIES + 1), ("properties",)),
    (
        {"type": "array", "prefixItems": [optional_strings(MAX_OBJECT_PROPERTIES)] * 3},
        ("prefixItems", 2, "properties"),
    ),
    ({"enum": list(range(MAX_ALTERNATIVES + 1))}, ("enum",)),
    ({"anyOf": [{"const": i} for i in range(MAX_ALTERNATIVES + 1)]}, ("anyOf",)),
    ({"type": "string", "maxLength": MAX_REPEAT + 1}, ("maxLength",)),
    ({"type": "array", "minItems": MAX_REPEAT + 1}, ("minItems",)),
    ({"type": "string", "pattern": "a" * (MAX_PATTERN_LENGTH + 1)}, ("pattern",)),
    ({"type": "string", "pattern": "(a{100}){100}"}, ("pattern",)),
    # Wide integer ranges: 76 characters of schema, 1,687 of grammar each (linear, with a large factor).
    (
        {
            "type": "array",
            "prefixItems": [{"type": "integer", "minimum": -123456789012345, "maximum": 987654321098765}] * 200,
        },
        (),
    ),
]


@pytest.mark.parametrize(("schema", "path"), LIMITED, ids=[str(path[:3]) for _, path in LIMITED])
def test_limits_are_refused_naming_where(schema: Any, path: tuple[Any, ...]) -> None:
    with pytest.raises(SchemaError) as raised:
        schema_grammar(schema)
    assert raised.value.path == path, raised.value.message
    assert "at most" in raised.value.message


def test_limits_are_inclusive() -> None:
    """At each limit, still accepted (and the deepest schema does not overflow Python's recursion)."""
    schema_grammar(nested(MAX_SCHEMA_DEPTH - 1, lambda s: {"type": "array", "items": s}))
    schema_grammar(optional_strings(MAX_OBJECT_PROPERTIES))
    schema_grammar({"enum": list(range(MAX_ALTERNATIVES))})
    schema_grammar({"type": "string", "maxLength": MAX_REPEAT, "minLength": MAX_REPEAT})
    schema_grammar({"type": "string", "pattern": "a" * MAX_PATTERN_LENGTH})


def test_a_megabyte_schema_is_refused_before_it_is_read_through() -> None:
    """The size walk stops at the limit: its position in a huge list shows it did not read on."""
    visited: list[int] = []

    class Counting(dict):  # a property schema that records when the walk reads it
        def items(self):  # type: ignore[override]
            visited.append(1)
            return super().items()

    properties = {f"p{i}": Counting(type="string", description="x" * 200) for i in range(5000)}
    with pytest.raises(SchemaError) as raised:
        check_size({"type": "object", "properties": properties})
    assert raised.value.path == ()
    assert len(visited) < 5000 * MAX_SCHEMA_BYTES // (1 << 20)  # about the first MAX_SCHEMA_BYTES of ~1.2 MB
