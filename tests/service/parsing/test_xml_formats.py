"""Qwen3-Coder's and GLM-4.5+'s XML-style tool calls: parsed whole and streamed alike, values typed by schema,
malformed blocks kept as text; their grammar dialects write what the parsers read; templates are detected."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from ovserve.service.parsing import OutputFormat, ParsedTurn, ToolCallStarted
from ovserve.service.parsing.formats import tool_schemas
from ovserve.service.parsing.markup import TAGGED_ARGUMENTS
from ovserve.service.parsing.tagged_calls import glm45_call, json_types, qwen3_coder_call, typed_value
from ovserve.service.structured.json_grammar import GrammarBuilder, SchemaError, raw_text

TEMPLATES = Path(__file__).parents[2] / "data" / "chat_templates"
SCHEMAS = {
    "get_weather": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}, "zip": {"type": "string"}},
    },
    "set_alarm": {
        "type": "object",
        "properties": {
            "hour": {"type": "number"},
            "loud": {"type": "boolean"},
            "label": {"type": ["string", "null"]},
            "mode": {"type": "object"},
            "days": {"type": "array"},
        },
    },
}

QWEN_WEATHER = (
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
    "<parameter=days>\n3\n</parameter>\n<parameter=zip>\n75001\n</parameter>\n</function>\n</tool_call>"
)
QWEN_ALARM = (
    "<tool_call>\n<function=set_alarm>\n<parameter=hour>\n7.5\n</parameter>\n<parameter=loud>\ntrue\n</parameter>\n"
    '<parameter=label>\nnull\n</parameter>\n<parameter=mode>\n{"repeat": false}\n</parameter>\n'
    "<parameter=days>\n[1, 2]\n</parameter>\n</function>\n</tool_call>"
)
GLM_WEATHER = (
    "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
    "<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n<arg_key>zip</arg_key>\n<arg_value>75001</arg_value>\n</tool_call>"
)
GLM_ALARM = (
    "<tool_call>set_alarm\n<arg_key>hour</arg_key>\n<arg_value>7.5</arg_value>\n<arg_key>loud</arg_key>\n"
    "<arg_value>true</arg_value>\n<arg_key>label</arg_key>\n<arg_value>null</arg_value>\n<arg_key>mode</arg_key>\n"
    '<arg_value>{"repeat": false}</arg_value>\n<arg_key>days</arg_key>\n<arg_value>[1, 2]</arg_value>\n</tool_call>'
)
WEATHER = ("get_weather", {"city": "Paris", "days": 3, "zip": "75001"})
ALARM = ("set_alarm", {"hour": 7.5, "loud": True, "label": None, "mode": {"repeat": False}, "days": [1, 2]})
FORMS = {"qwen3_coder": (QWEN_WEATHER, QWEN_ALARM), "glm45": (GLM_WEATHER, GLM_ALARM)}


def parse(name: str, chunks: list[str], schemas: dict[str, Any] | None = SCHEMAS, **options: Any) -> ParsedTurn:
    """The turn ``chunks`` make, fed one by one to a fresh parser of format ``name``."""
    parser = OutputFormat(name, options.pop("reasoning", None)).parser(schemas=schemas, **options)
    for chunk in chunks:
        parser.feed(chunk)
    parser.finish()
    return parser.result


def calls(turn: ParsedTurn) -> list[tuple[str, Any]]:
    return [(call.name, json.loads(call.arguments)) for call in turn.calls]


def splits(text: str) -> list[list[str]]:
    """``text`` whole, cut in two at every point, one character at a time, and in random pieces."""
    rng = random.Random(len(text))
    cuts = [sorted(rng.sample(range(1, len(text)), min(len(text) - 1, 6))) for _ in range(5)]
    pieces = [[text[a:b] for a, b in zip([0, *cut], [*cut, len(text)], strict=True)] for cut in cuts]
    return [[text], *([text[:i], text[i:]] for i in range(1, len(text))), list(text), *pieces]


def assert_every_split(name: str, text: str, content: str, expected: list[tuple[str, Any]], **options: Any) -> None:
    for chunks in splits(text):
        turn = parse(name, chunks, **options)
        assert (turn.content, calls(turn)) == (content, expected), chunks


@pytest.mark.parametrize("name", FORMS)
def test_one_call_streamed_or_whole(name: str) -> None:
    weather, _ = FORMS[name]
    assert_every_split(name, weather, "", [WEATHER])


@pytest.mark.parametrize("name", FORMS)
def test_two_calls_after_text_streamed_or_whole(name: str) -> None:
    weather, alarm = FORMS[name]
    text = "Let me check.\n\n" + weather + "\n" + alarm
    assert_every_split(name, text, "Let me check.", [WEATHER, ALARM])
    turn = parse(name, [text])
    assert len({call.id for call in turn.calls}) == 2 and turn.calls[0].id.startswith("call_")


@pytest.mark.parametrize("name", FORMS)
def test_reasoning_then_calls(name: str) -> None:
    weather, alarm = FORMS[name]
    text = "<think>Paris, then an alarm.</think>\n" + weather + alarm
    for chunks in splits(text)[::7]:
        turn = parse(name, chunks, reasoning="think")
        assert (turn.reasoning, turn.content, calls(turn)) == ("Paris, then an alarm.", "", [WEATHER, ALARM])


@pytest.mark.parametrize("name", FORMS)
def test_without_schemas_a_value_is_json_when_it_reads_as_json(name: str) -> None:
    weather, alarm = FORMS[name]
    turn = parse(name, [weather + alarm], schemas=None)
    assert calls(turn) == [("get_weather", {**WEATHER[1], "zip": 75001}), ALARM]  # "75001" reads as a number


def test_string_values_are_raw_text_with_markup_and_line_breaks() -> None:
    code = 'def f(x):\n    return x < 1 and "a</b>"\n'
    qwen = f"<tool_call>\n<function=write>\n<parameter=code>\n{code}\n</parameter>\n</function>\n</tool_call>"
    glm = f"<tool_call>write\n<arg_key>code</arg_key>\n<arg_value>{code}</arg_value>\n</tool_call>"
    schemas = {"write": {"type": "object", "properties": {"code": {"type": "string"}}}}
    for name, text in (("qwen3_coder", qwen), ("glm45", glm)):
        assert_every_split(name, text, "", [("write", {"code": code})], schemas=schemas)


def test_glm47_compact_form_and_no_arguments() -> None:
    """GLM-4.7 writes its members without line breaks; a call without arguments is the name alone."""
    text = (
        "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Rome</arg_value></tool_call>"
        + "<tool_call>now</tool_call>"
    )
    assert_every_split("glm45", text, "", [("get_weather", {"city": "Rome"}), ("now", {})])
    qwen = "<tool_call>\n<function=now>\n</function>\n</tool_call>"
    assert_every_split("qwen3_coder", qwen, "", [("now", {})])


MALFORMED = {
    "qwen3_coder": [
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</function>\n</tool_call>",  # unclosed value
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</tool_call>",  # no </function>
        "<tool_call>\nget_weather city=Paris\n</tool_call>",  # not the markup
        "<tool_call>\n<function=get weather>\n</function>\n</tool_call>",  # a name with a space
        "<tool_call>\n<function=f>\nstray text\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>",
    ],
    "glm45": [
        "<tool_call>get_weather\n<arg_key>city</arg_key>\nParis\n</tool_call>",  # a key without a value
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris\n</tool_call>",  # unclosed value
        "<tool_call>I think I should call a tool</tool_call>",  # words, not a name
        "<tool_call>f\n<arg_value>1</arg_value>\n</tool_call>",  # a value without a key
    ],
}


@pytest.mark.parametrize("name", FORMS)
def test_a_malformed_block_stays_text(name: str) -> None:
    weather, _ = FORMS[name]
    for bad in MALFORMED[name]:
        for chunks in splits(bad)[::5]:
            turn = parse(name, chunks)
            assert (turn.content, turn.calls) == (bad, []), chunks
        # Among good calls, only the bad block is text.
        turn = parse(name, [weather + "\n" + bad + "\n" + weather])
        assert (turn.content, calls(turn)) == (bad, [WEATHER, WEATHER])


@pytest.mark.parametrize("name", FORMS)
def test_markup_left_as_text_without_tools_and_cut_off_calls(name: str) -> None:
    weather, _ = FORMS[name]
    assert parse(name, [weather], tools=False).content == weather
    # Cut off before </tool_call> (a stop string, max_tokens): a call if the rest of its markup is whole. GLM's
    # call ends only at that tag (any member could have been the last): cut there, it stays text (cut_lists.py).
    turn = parse(name, [cut_call := weather.removesuffix("</tool_call>")])
    assert (turn.content, calls(turn)) == (("", [WEATHER]) if name != "glm45" else (cut_call, []))
    cut = weather[: weather.index("Paris") + 3]
    assert parse(name, [cut]).content == cut


@pytest.mark.parametrize("name", FORMS)
def test_streamed_pieces_name_the_call_first(name: str) -> None:
    weather, _ = FORMS[name]
    parser = OutputFormat(name).parser(schemas=SCHEMAS)
    pieces = [piece for char in weather for piece in parser.feed(char)] + parser.finish()
    assert isinstance(pieces[0], ToolCallStarted) and pieces[0].name == "get_weather"


@pytest.mark.parametrize(
    ("raw", "schema", "value"),
    [
        ("3", {"type": "string"}, "3"),
        ("3", {"type": "integer"}, 3),
        ("3.0", {"type": "integer"}, 3.0),
        ("3.5", {"type": "integer"}, "3.5"),  # not of the declared type: the text, as vLLM does
        ("3.5", {"type": "number"}, 3.5),
        ("true", {"type": "boolean"}, True),
        ("yes", {"type": "boolean"}, "yes"),
        ("null", {"type": ["string", "null"]}, None),
        ("12", {"type": ["string", "null"]}, "12"),
        ("null", {"type": "string"}, "null"),
        (' {"a": [1]} ', {"type": "object"}, {"a": [1]}),
        ("[1]", {"anyOf": [{"type": "array"}, {"type": "null"}]}, [1]),
        ("celsius", {"enum": ["celsius", "fahrenheit"]}, "celsius"),
        ("1", {"enum": ["1", 1]}, 1),
        ("5", {"type": "integer", "nullable": True}, 5),
        ("NaN", {"type": "number"}, "NaN"),  # Python reads NaN; JSON has none
        ("Paris", None, "Paris"),
        ("[1, 2]", None, [1, 2]),
        ("3", {"$ref": "#/$defs/x"}, 3),  # a type the parser cannot see: JSON first
    ],
)
def test_typed_value(raw: str, schema: Any, value: Any) -> None:
    assert typed_value(raw, schema) == value
    assert type(typed_value(raw, schema)) is type(value)


def test_json_types() -> None:
    assert json_types({"type": "string"}) == {"string"}
    assert json_types({"anyOf": [{"type": "string"}, {"const": 1}], "nullable": True}) == {"string", "number", "null"}
    assert json_types({"anyOf": [{"type": "string"}, {}]}) is None
    assert json_types({"description": "anything"}) is None and json_types(True) is None


def test_decoders_read_the_block_between_the_tags() -> None:
    assert qwen3_coder_call("<function=f>\n<parameter=a>\n1\n</parameter>\n</function>") == [("f", '{"a": 1}')]
    assert glm45_call("f\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>") == [("f", '{"a": 1}')]
    assert qwen3_coder_call("<function=f>") is None and glm45_call("") is None


def test_tool_schemas_of_either_request_form() -> None:
    parameters = {"type": "object", "properties": {"a": {"type": "string"}}}
    chat: list[dict[str, Any]] = [
        {"type": "function", "function": {"name": "f", "parameters": parameters}},
        {"type": "function"},
    ]
    flat: list[dict[str, Any]] = [
        {"type": "function", "name": "g", "parameters": parameters},
        {"type": "function", "name": "h"},
    ]
    assert tool_schemas(chat) == {"f": parameters}
    assert tool_schemas(flat) == {"g": parameters, "h": {}}


def test_real_templates_are_detected() -> None:
    chosen = {
        file: OutputFormat.choose(None, None, (TEMPLATES / file).read_text())
        for file in ("Qwen3-Coder.jinja", "GLM-4.6.jinja", "Qwen-Qwen2.5-7B-Instruct.jinja")
    }
    assert chosen["Qwen3-Coder.jinja"].tool_parser == "qwen3_coder"
    assert chosen["GLM-4.6.jinja"] == OutputFormat("glm45", "think")
    assert chosen["Qwen-Qwen2.5-7B-Instruct.jinja"].tool_parser == "hermes"


# ---- the grammar dialects ----


def as_regex(expression: str) -> str:
    """A Python regex for an EBNF expression of literals, classes, groups and repetition (raw_text's)."""
    literals = re.sub(r'"((?:[^"\\]|\\.)*)"', lambda match: re.escape(json.loads(match.group(0))), expression)
    return literals.replace(" ", "")


def test_raw_text_is_any_text_without_the_closing_tags() -> None:
    stops = ("</parameter>", "</tool_call>")
    pattern = re.compile(as_regex(raw_text(stops)), re.DOTALL)
    rng = random.Random(7)
    alphabet = ["<", "/", ">", "p", "a", "r", "t", "o", "l", "_", "c", "x", "\n", "</parameter>", "</tool_call>",
                "</paramete", "</tool_cal"]  # fmt: skip
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(8)))
        assert bool(pattern.fullmatch(text)) is not any(stop in text for stop in stops), text


@pytest.mark.parametrize("dialect", TAGGED_ARGUMENTS)
def test_tagged_dialects_refuse_what_they_cannot_write(dialect: str) -> None:
    closing = TAGGED_ARGUMENTS[dialect].stops[-1]  # a tag that ends the call, in this dialect
    refused = [
        ({"type": "object", "properties": {"a b": {"type": "string"}}}, ("properties", "a b")),
        ({"type": "object", "properties": {"a": {"type": "string", "pattern": "^x$"}}}, ("properties", "a", "pattern")),
        ({"type": "object", "properties": {"a": {"enum": ["x" + closing]}}}, ("properties", "a")),
        ({"type": "array"}, ("type",)),
        ({"type": "object", "properties": {"a": {"type": "string", "foo": 1}}}, ("properties", "a", "foo")),
    ]
    for schema, path in refused:
        with pytest.raises(SchemaError) as raised:
            GrammarBuilder(dialect).add(schema)
        assert raised.value.path == path, raised.value.message


def test_tagged_dialect_writes_strings_raw_and_the_rest_as_json() -> None:
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string", "maxLength": 8},
            "day": {"type": "string", "format": "date"},
            "n": {"type": ["integer", "string"], "nullable": True},
            "unit": {"enum": ["c", 1]},
        },
        "required": ["city"],
    }
    grammar = GrammarBuilder("qwen3_xml")
    ebnf = grammar.ebnf(grammar.add(schema))
    assert '"<parameter=city>\\n" (([^<]{0,8})) "\\n</parameter>\\n"' in ebnf
    assert '"<parameter=unit>\\n" (("c") | ("1"))' in ebnf
    assert '"<parameter=n>\\n" ((raw_text) | (((integer))) | ("null"))' in ebnf
    assert '"<parameter=day>\\n" ((date))' in ebnf
