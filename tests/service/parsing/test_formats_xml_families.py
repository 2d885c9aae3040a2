"""The XML-argument families of ovserve.service.parsing.formats_xml (Seed-OSS, MiniMax-M2, DeepSeek V3.2 / V4 DSML,
Step3, Hunyuan 3, MiniCPM5): calls as each model writes them parsed whole and in small deltas, typed by the
tools' schemas; malformed markup kept as text; reasoning split; each family's published template renders the
known call exactly as its format's markup writes it (so detection by rendering finds it, and no other
format); on the engine, DSML's forced values marked by how they are written, allowed_tools "auto", and a
forced call after each family's own reasoning block (test_call_markup forces every format otherwise)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jinja2
import jinja2.sandbox
import openvino_genai as ov_genai
import pytest
from jinja2.ext import Extension

from ovserve.clients.v1 import chat_pb2
from ovserve.service.engine.chat_template import minja_render
from ovserve.service.engine.generation_config import structured_output_config as engine_form
from ovserve.service.errors import FieldViolation
from ovserve.service.models import BUNDLED_MODEL, BUNDLED_MODELS_DIR
from ovserve.service.parsing import TOOL_PARSERS, OutputFormat, ParsedTurn, calls_xml, formats_xml
from ovserve.service.parsing.detection import PROBE_CALL_ID, Render, written_arguments
from ovserve.service.parsing.formats import ALIASES, REASONING_PARSERS
from ovserve.service.parsing.markup import DSML, MINIMAX_NS, TAGGED_ARGUMENTS, CallMarkup
from ovserve.service.parsing.tagged_calls import typed_value
from ovserve.service.structured.output import output_plan, structured_output_config
from tests.rpc import parse as parse_request
from tests.service.api.test_call_markup import (
    ASK,
    BOUNDED,
    NAMES,
    TOOLS,
    assert_calls,
    forced_config,
    generate,
    read_back,
)
from tests.service.parsing.feeding import calls, fed
from tests.service.parsing.feeding import deltas as feeding_deltas
from tests.service.parsing.test_xml_formats import ALARM, SCHEMAS, WEATHER  # Qwen3-Coder's and GLM's: every JSON type

TEMPLATES = Path(__file__).parents[2] / "data" / "chat_templates"
FORMATS = list(formats_xml.TOOL_FORMATS)
NS = MINIMAX_NS
STEP3_OPEN, STEP3_CLOSE = formats_xml.STEP3_CALLS_BEGIN, formats_xml.STEP3_CALLS_END
STEP3_CALL = formats_xml.STEP3_CALL_BEGIN + "function" + formats_xml.STEP3_SEP
# get_weather(city="Paris", days=3, zip="75001") as each model writes it (its template's, or vLLM's parser's,
# examples), line breaks and all: written by hand, not from the markup, so a wrong markup cannot pass.
WRITTEN = {
    "seed_oss": "<seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n"
    "<parameter=days>3</parameter>\n<parameter=zip>\n75001\n</parameter>\n</function>\n</seed:tool_call>",
    "minimax_m2": '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n'
    '<parameter name="days">3</parameter>\n<parameter name="zip">75001</parameter>\n</invoke>\n</minimax:tool_call>',
    "deepseek_v32": f'<{DSML}function_calls>\n<{DSML}invoke name="get_weather">\n'
    f'<{DSML}parameter name="city" string="true">Paris</{DSML}parameter>\n'
    f'<{DSML}parameter name="days" string="false">3</{DSML}parameter>\n'
    f'<{DSML}parameter name="zip" string="true">75001</{DSML}parameter>\n</{DSML}invoke>\n</{DSML}function_calls>',
    "deepseek_v4": f'<{DSML}tool_calls>\n<{DSML}invoke name="get_weather">\n'
    f'<{DSML}parameter name="city" string="true">Paris</{DSML}parameter>\n'
    f'<{DSML}parameter name="days" string="false">3</{DSML}parameter>\n'
    f'<{DSML}parameter name="zip" string="true">75001</{DSML}parameter>\n</{DSML}invoke>\n</{DSML}tool_calls>',
    "step3": f'{STEP3_OPEN}{STEP3_CALL}<steptml:invoke name="get_weather"><steptml:parameter name="city">Paris'
    '</steptml:parameter><steptml:parameter name="days">3</steptml:parameter><steptml:parameter name="zip">75001'
    f"</steptml:parameter></steptml:invoke>{formats_xml.STEP3_CALL_END}{STEP3_CLOSE}",
    "hy_v3": "<tool_calls:opensource>\n<tool_call:opensource>get_weather<tool_sep:opensource>\n"
    "<arg_key:opensource>city</arg_key:opensource>\n<arg_value:opensource>Paris</arg_value:opensource>\n"
    "<arg_key:opensource>days</arg_key:opensource>\n<arg_value:opensource>3</arg_value:opensource>\n"
    "<arg_key:opensource>zip</arg_key:opensource>\n<arg_value:opensource>75001</arg_value:opensource>\n"
    "</tool_call:opensource>\n</tool_calls:opensource>",
    "minicpm5xml": '<function name="get_weather"><param name="city">Paris</param><param name="days">3</param>'
    '<param name="zip">75001</param></function>',
    "kimi_k3": '<|open|>tools<|sep|><|open|>call tool="get_weather" index="1"<|sep|>'
    '<|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|>'
    '<|open|>argument key="days" type="number"<|sep|>3<|close|>argument<|sep|>'
    '<|open|>argument key="zip" type="string"<|sep|>75001<|close|>argument<|sep|>'
    "<|close|>call<|sep|><|close|>tools<|sep|>",
    "minimax_m3": f'{NS}<tool_call>\n{NS}<invoke name="get_weather">{NS}<city>Paris{NS}</city>{NS}<days>3{NS}</days>'
    f"{NS}<zip>75001{NS}</zip>{NS}</invoke>\n{NS}</tool_call>",
    "solar_open": "<|tool_calls|><|tool_call:begin|>a1b2c3d4e5<|tool_call:name|>get_weather<|tool_call:args|>"
    '{"city": "Paris", "days": 3, "zip": "75001"}<|tool_call:end|><|calls|>',
    "solar_open2": "<|tool_call:start|>get_weather\n<|tool_arg:start|>city<|tool_arg:value|>Paris<|tool_arg:end|>\n"
    "<|tool_arg:start|>days<|tool_arg:value|>3<|tool_arg:end|>\n<|tool_arg:start|>zip<|tool_arg:value|>75001"
    "<|tool_arg:end|>\n<|tool_call:end|>",
}


def turn_of(name: str, chunks: list[str], schemas: dict[str, Any] | None = SCHEMAS, **options: Any) -> ParsedTurn:
    """The turn ``chunks`` make, fed one by one to a fresh parser of format ``name``."""
    return fed(OutputFormat(name, options.pop("reasoning", None)), chunks, schemas=schemas, **options)[0]


def deltas(text: str) -> list[list[str]]:
    """``text`` as feeding.deltas cuts it, in two at every 7th point (these calls are long)."""
    return feeding_deltas(text, cut_every=7)


def written(markup: CallMarkup, *made: tuple[str, dict[str, Any]]) -> str:
    """Calls as ``markup`` writes them (the grammar's and the detection's form): the list, its members."""
    texts = [
        markup.begin(name, index) + written_arguments(markup, args) + markup.call_end
        for index, (name, args) in enumerate(made)
    ]
    return markup.opening + markup.separator.join(texts) + markup.closing


def markup_of(name: str) -> CallMarkup:
    return TOOL_PARSERS[name].markup


@pytest.mark.parametrize("name", FORMATS)
def test_the_models_call_streamed_or_whole(name: str) -> None:
    for chunks in deltas(WRITTEN[name]):
        turn = turn_of(name, chunks)
        assert (turn.content, calls(turn)) == ("", [WEATHER]), chunks


@pytest.mark.parametrize("name", FORMATS)
def test_two_calls_after_text_typed_by_the_schemas(name: str) -> None:
    text = "Let me check.\n\n" + written(markup_of(name), WEATHER, ALARM)
    for chunks in deltas(text)[:4]:
        turn = turn_of(name, chunks)
        assert (turn.content, calls(turn)) == ("Let me check.", [WEATHER, ALARM]), chunks
    turn = turn_of(name, [text])
    assert len({call.id for call in turn.calls}) == 2


@pytest.mark.parametrize("name", FORMATS)
def test_without_schemas_a_value_is_json_unless_the_markup_says_text(name: str) -> None:
    """No schemas: "75001" reads as a number, as Qwen3-Coder's values do; DSML's string="true" keeps it text, as
    JSON arguments (Solar Open's) keep their strings."""
    turn = turn_of(name, [WRITTEN[name]], schemas=None)
    dialect = TAGGED_ARGUMENTS.get(markup_of(name).arguments)
    zip_code = "75001" if dialect is None or dialect.json_key_end else 75001
    assert calls(turn) == [("get_weather", {**WEATHER[1], "zip": zip_code})]


def test_dsml_types_by_the_string_attribute_and_the_schema() -> None:
    """string="true" is text wherever the schema allows a string, string="false" JSON; a value the schema
    types otherwise is typed whatever the attribute says (a forced call may write either)."""
    members = (
        f'<{DSML}parameter name="a" string="true">3</{DSML}parameter>'
        f'<{DSML}parameter name="b" string="false">3</{DSML}parameter>'
        f'<{DSML}parameter name="c" string="true">3</{DSML}parameter>'
        f'<{DSML}parameter name="d" string="false">[1]</{DSML}parameter>'
    )
    text = f'<{DSML}function_calls><{DSML}invoke name="f">{members}</{DSML}invoke></{DSML}function_calls>'
    schemas = {"f": {"properties": {"a": {"type": ["integer", "string"]}, "b": {"type": ["integer", "string"]},
                                    "c": {"type": "integer"}}}}  # fmt: skip
    assert calls(turn_of("deepseek_v32", [text], schemas=schemas)) == [("f", {"a": "3", "b": 3, "c": 3, "d": [1]})]


def test_string_values_keep_markup_and_line_breaks() -> None:
    """A raw string holds anything but its closing tag; MiniCPM5 wraps such values in CDATA, which is read."""
    code = 'if x < 1:\n    return "a</b>"'
    schemas = {"write": {"type": "object", "properties": {"code": {"type": "string"}}}}
    for name in FORMATS:
        text = written(markup_of(name), ("write", {"code": code}))
        assert calls(turn_of(name, [text], schemas=schemas)) == [("write", {"code": code})], name
    cdata = '<function name="write"><param name="code"><![CDATA[a </param> & b]]></param></function>'
    assert calls(turn_of("minicpm5xml", [cdata], schemas=schemas)) == [("write", {"code": "a </param> & b"})]


def test_minimax_m3_nests_objects_and_arrays_as_elements() -> None:
    """Objects as elements by name, arrays as <item>s, typed by the schema (or, without one, by the names);
    JSON where a grammar wrote it; nesting past MAX_NESTING is not a call."""
    value = f"{NS}<n>2.5{NS}</n>{NS}<on>true{NS}</on>{NS}<tags>{NS}<item>a{NS}</item>{NS}<item>1{NS}</item>{NS}</tags>"
    text = f'{NS}<tool_call>{NS}<invoke name="f">{NS}<opts>{value}{NS}</opts>{NS}</invoke>{NS}</tool_call>'
    tags = {"type": "array", "items": {"type": "string"}}
    schemas = {"f": {"properties": {"opts": {"type": "object", "properties": {"n": {"type": "number"}, "tags": tags}}}}}
    for chunks in deltas(text)[:4]:
        assert calls(turn_of("minimax_m3", chunks, schemas=schemas)) == [
            ("f", {"opts": {"n": 2.5, "on": True, "tags": ["a", "1"]}})
        ]
    assert calls(turn_of("minimax_m3", [text], schemas=None)) == [
        ("f", {"opts": {"n": 2.5, "on": True, "tags": ["a", 1]}})
    ]
    same_name = f'{NS}<tool_call>{NS}<invoke name="f">{NS}<a>{NS}<a>x{NS}</a>{NS}</a>{NS}</invoke>{NS}</tool_call>'
    assert calls(turn_of("minimax_m3", [same_name], schemas=None)) == [("f", {"a": {"a": "x"}})]
    json_written = f'{NS}<tool_call>{NS}<invoke name="f">{NS}<opts>{{"n": 1}}{NS}</opts>{NS}</invoke>{NS}</tool_call>'
    assert calls(turn_of("minimax_m3", [json_written])) == [("f", {"opts": {"n": 1}})]

    def nested(depth: int) -> str:  # the argument's element, then ``depth`` elements in it
        inner = f"{NS}<a>" * (depth + 1) + "x" + f"{NS}</a>" * (depth + 1)
        return f'{NS}<tool_call>{NS}<invoke name="f">{inner}{NS}</invoke>{NS}</tool_call>'

    assert len(turn_of("minimax_m3", [nested(calls_xml.MAX_NESTING)]).calls) == 1
    assert turn_of("minimax_m3", [nested(calls_xml.MAX_NESTING + 1)]).content == nested(calls_xml.MAX_NESTING + 1)


@pytest.mark.parametrize(
    ("raw", "schema", "value"),
    [
        ("True", {"type": "boolean"}, True),  # Seed-OSS's template writes values with Jinja's string filter
        ("False", {"type": ["boolean", "null"]}, False),
        ("None", {"type": ["integer", "null"]}, None),
        ("{'a': 1, 'b': [True, None]}", {"type": "object"}, {"a": 1, "b": [True, None]}),
        ("[1, 'x']", {"type": "array"}, [1, "x"]),
        ("True", None, "True"),  # no schema to say it is not text
        ("True", {"type": "string"}, "True"),
        ("{1, 2}", {"type": "array"}, "{1, 2}"),  # a set is no JSON value
        ("[1]", {"type": "object"}, "[1]"),
        ("__import__('os')", {"type": "object"}, "__import__('os')"),  # never evaluated
    ],
)
def test_python_spelled_values_where_the_schema_allows(raw: str, schema: Any, value: Any) -> None:
    assert typed_value(raw, schema) == value and type(typed_value(raw, schema)) is type(value)


def test_a_value_nested_past_the_decoders_stack_stays_text() -> None:
    """JSON's decoder raises RecursionError (not ValueError) on deep nesting: the value is text, not a crash."""
    deep = "[" * 100_000
    text = f"<seed:tool_call>\n<function=f>\n<parameter=a>{deep}</parameter>\n</function>\n</seed:tool_call>"
    schemas = {"f": {"properties": {"a": {"type": "array"}}}}
    assert calls(turn_of("seed_oss", [text], schemas=schemas)) == [("f", {"a": deep})]
    assert calls(turn_of("seed_oss", [text], schemas=None)) == [("f", {"a": deep})]
    solar = f"<|tool_calls|><|tool_call:begin|>0<|tool_call:name|>f<|tool_call:args|>{deep}<|tool_call:end|><|calls|>"
    assert turn_of("solar_open", [solar]).content == solar  # JSON arguments that deep are no call


def test_a_call_without_arguments() -> None:
    for name in FORMATS:
        assert calls(turn_of(name, [written(markup_of(name), ("now", {}))])) == [("now", {})], name


MALFORMED = {
    "seed_oss": [
        "<seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris\n</function>\n</seed:tool_call>",  # unclosed
        "<seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n</seed:tool_call>",  # no end
        "<seed:tool_call>\n<function=get weather>\n</function>\n</seed:tool_call>",  # a name with a space
        "<seed:tool_call>\n<function=f>\nstray\n<parameter=a>1</parameter>\n</function>\n</seed:tool_call>",
        "<seed:tool_call>\nget_weather city=Paris\n</seed:tool_call>",  # not the markup
    ],
    "minimax_m2": [
        '<minimax:tool_call>\n<invoke name="f">\n<parameter name="city">Paris\n</invoke>\n</minimax:tool_call>',
        '<minimax:tool_call>\n<invoke name="f">\n<parameter name="a">1</parameter>\n</minimax:tool_call>',
        '<minimax:tool_call>\n<invoke name="f"><parameter name="">1</parameter></invoke>\n</minimax:tool_call>',
        "<minimax:tool_call>\nI will call get_weather\n</minimax:tool_call>",
    ],
    "deepseek_v32": [
        f'<{DSML}function_calls><{DSML}invoke name="f"><{DSML}parameter name="a">1</{DSML}parameter>'
        f"</{DSML}invoke></{DSML}function_calls>",  # no string attribute
        f'<{DSML}function_calls><{DSML}invoke name="f"><{DSML}parameter name="a" string="true">1'
        f"</{DSML}invoke></{DSML}function_calls>",  # unclosed value
        f'<{DSML}function_calls><{DSML}invoke name="f"></{DSML}function_calls>',  # unclosed invoke
    ],
    "deepseek_v4": [
        f'<{DSML}tool_calls><{DSML}invoke name="f"><{DSML}parameter name="a" string="maybe">1</{DSML}parameter>'
        f"</{DSML}invoke></{DSML}tool_calls>",
        f"<{DSML}tool_calls>text</{DSML}tool_calls>",
    ],
    "step3": [
        f'{STEP3_OPEN}{STEP3_CALL}<steptml:invoke name="f"><steptml:parameter name="a">1</steptml:invoke>'
        f"{formats_xml.STEP3_CALL_END}{STEP3_CLOSE}",
        f'{STEP3_OPEN}<steptml:invoke name="f"></steptml:invoke>{STEP3_CLOSE}',  # no call tokens
    ],
    "hy_v3": [
        "<tool_calls:opensource><tool_call:opensource>f<tool_sep:opensource><arg_key:opensource>a"
        "</arg_key:opensource>1</tool_call:opensource></tool_calls:opensource>",  # a key without a value
        "<tool_calls:opensource><tool_call:opensource>f</tool_call:opensource></tool_calls:opensource>",  # no sep
    ],
    "kimi_k3": [
        '<|open|>tools<|sep|><|open|>call tool="f"<|sep|><|close|>call<|sep|><|close|>tools<|sep|>',  # no index
        '<|open|>tools<|sep|><|open|>call tool="f" index="1"<|sep|><|open|>argument key="a" type="date"<|sep|>1'
        "<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>",  # a type K3 has not
        '<|open|>tools<|sep|><|open|>call tool="f" index="1"<|sep|>text<|close|>call<|sep|><|close|>tools<|sep|>',
    ],
    "minimax_m3": [
        f'{NS}<tool_call>{NS}<invoke name="f">{NS}<a>1{NS}</b>{NS}</invoke>{NS}</tool_call>',  # unbalanced
        f'{NS}<tool_call>{NS}<invoke name="f">{NS}<a>{NS}<b>1{NS}</a>{NS}</invoke>{NS}</tool_call>',  # unclosed b
        f'{NS}<tool_call>{NS}<invoke name="f">stray{NS}<a>1{NS}</a>{NS}</invoke>{NS}</tool_call>',
        f'{NS}<tool_call>{NS}<invoke name="f">{NS}<a>1{NS}</a>{NS}</tool_call>',  # no </invoke>
    ],
    "solar_open": [
        "<|tool_calls|><|tool_call:begin|>0<|tool_call:args|>{}<|tool_call:end|><|calls|>",  # no name
        "<|tool_calls|><|tool_call:begin|>0<|tool_call:name|>f<|tool_call:args|>{oops}<|tool_call:end|><|calls|>",
        "<|tool_calls|><|tool_call:begin|>0<|tool_call:name|>f<|tool_call:args|>[1]<|tool_call:end|><|calls|>",
    ],
    "solar_open2": [
        "<|tool_call:start|>f\n<|tool_arg:start|>a<|tool_arg:value|>1<|tool_call:end|>",  # unclosed value
        "<|tool_call:start|>f\n<|tool_arg:start|>a<|tool_arg:end|><|tool_call:end|>",  # no value tag
        "<|tool_call:start|>two words\n<|tool_call:end|>",
    ],
    "minicpm5xml": [
        '<function name="f"><param name="a">1</function>',  # unclosed value
        '<function name="f">stray<param name="a">1</param></function>',
        '<function name="get weather"></function>',
        '<function name="f"><param name="a"><![CDATA[1</param></function>',  # unclosed CDATA
    ],
}


@pytest.mark.parametrize("name", FORMATS)
def test_malformed_markup_stays_text(name: str) -> None:
    for bad in MALFORMED[name]:
        for chunks in deltas(bad)[:4]:
            turn = turn_of(name, chunks)
            assert (turn.content, turn.calls) == (bad, []), chunks
    assert turn_of(name, [WRITTEN[name]], tools=False).content == WRITTEN[name]  # no tools: markup is text


# The reasoning parser each family's template calls for, and how its block is written.
REASONING = {name: name for name in formats_xml.REASONING_FORMATS}  # the others' blocks are <think>


@pytest.mark.parametrize("name", FORMATS)
def test_reasoning_then_calls(name: str) -> None:
    think = REASONING_PARSERS[REASONING.get(name, "think")]
    text = f"{think.begin}Paris, then.{think.end}\n" + WRITTEN[name]
    for chunks in deltas(text)[:4]:
        turn = turn_of(name, chunks, reasoning=REASONING.get(name, "think"))
        assert (turn.reasoning, turn.content, calls(turn)) == ("Paris, then.", "", [WEATHER]), chunks
    # A template that opens the block itself (MiniMax-M2's prompt ends with <think>): the output starts inside.
    turn = turn_of(name, [f"Paris.{think.end}" + WRITTEN[name]], reasoning=REASONING.get(name, "think"),
                   prompt_tail=think.begin + "\n")  # fmt: skip
    assert (turn.reasoning, calls(turn)) == ("Paris.", [WEATHER])


def test_vllm_names() -> None:
    """vLLM's tool and reasoning parser names for these families resolve to a format here."""
    for alias, name in {"step3p5": "qwen3_coder", "ling3": "glm45", "poolside_v1": "glm45", "mimo": "hermes"}.items():
        assert OutputFormat.choose(alias, None, "").tool_parser == name
    for name in FORMATS:
        assert OutputFormat.choose(name, None, "").call_markup is TOOL_PARSERS[name].markup
    for alias in ("minimax_m2", "deepseek_v3", "step3", "step3p5", "kimi_k2", "ling3", "poolside_v1"):
        assert OutputFormat.choose(None, alias, "").think_markup == REASONING_PARSERS["think"], alias
    assert OutputFormat.choose(None, "seedoss", "").think_markup == formats_xml.SEED_THINK
    assert set(ALIASES["tool"]) >= set(formats_xml.ALIASES["tool"])


# ---- the published templates ----


class _Generation(Extension):
    """transformers' {% generation %} block (Laguna's templates mark the assistant's turn with it): its body."""

    tags = {"generation"}  # noqa: RUF012 (jinja2's Extension declares it so)

    def parse(self, parser: Any) -> Any:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.Scope(body, lineno=lineno)


ENVIRONMENT = jinja2.sandbox.ImmutableSandboxedEnvironment(
    trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols", _Generation]
)
ENVIRONMENT.globals["strftime_now"] = lambda pattern: "26 Jul 2024"
ENVIRONMENT.filters["tojson"] = lambda value, ensure_ascii=False, indent=None, **_: json.dumps(
    value, ensure_ascii=ensure_ascii, indent=indent
)
KNOWN_ARGUMENTS = {"city": "Paris", "days": 3}  # the call detection renders: get_weather(city="Paris", days=3)
KNOWN_TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "The weather of a city",
                "parameters": {"type": "object", "required": ["city"], "properties": {
                    "city": {"type": "string"}, "days": {"type": "integer"}}}}}]  # fmt: skip
KNOWN_CALL: list[dict[str, Any]] = [
    {"role": "user", "content": "What is the weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": PROBE_CALL_ID, "type": "function", "function": {"name": "get_weather", "arguments": KNOWN_ARGUMENTS}}]},
    {"role": "tool", "tool_call_id": PROBE_CALL_ID, "content": "Sunny"},
]  # fmt: skip
# Template -> the tool parser and the reasoning parser detection finds for it (None: none is asserted; MiMo-VL's
# template shows no reasoning).
FAMILY_TEMPLATES = {
    "ByteDance-Seed-OSS.jinja": ("seed_oss", "seed_oss"),
    "MiniMax-M2.jinja": ("minimax_m2", "think"),
    "deepseek-ai-DeepSeek-V3.2.jinja": ("deepseek_v32", "think"),
    "deepseek-ai-DeepSeek-V4.jinja": ("deepseek_v4", "think"),
    "deepseek-ai-DeepSeek-V4-Flash-0731.jinja": ("deepseek_v4", "think"),
    "tencent-Hy3.jinja": ("hy_v3", "hy_v3"),
    "openbmb-MiniCPM5-1B.jinja": ("minicpm5xml", "think"),
    # Served by an existing format (vLLM's name for the family as an alias where it has one).
    "StepFun3.5-Flash.jinja": ("step3p5", "think"),
    "Qwen3.5-4B.jinja": ("qwen3_coder", "think"),
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja": ("qwen3_coder", "think"),
    "inclusionai-ling-3.0-flash.jinja": ("ling3", "think"),
    "poolside-Laguna-XS.2.jinja": ("poolside_v1", "think"),
    "poolside-Laguna-XS-2.1.jinja": ("poolside_v1", "think"),
    "poolside-Laguna-S-2.1.jinja": ("poolside_v1", "think"),
    "GLM-4.7-Flash.jinja": ("glm47", "think"),
    "MiMo-VL.jinja": ("mimo", None),
    "Reka-Edge.jinja": ("hermes", "think"),
    "Kimi-K2-Thinking.jinja": ("kimi_k2", "think"),
    "upstage-Solar-Open-100B.jinja": ("solar_open", "solar_open"),
    "Kimi-K3.jinja": ("kimi_k3", "kimi_k3"),
    "MiniMax-M3.jinja": ("minimax_m3", "minimax_m3"),
}


@pytest.fixture(scope="module")
def tokenizer() -> ov_genai.Tokenizer:
    return ov_genai.Tokenizer(str(BUNDLED_MODELS_DIR / BUNDLED_MODEL))


def renderer(template: str, tokenizer: ov_genai.Tokenizer) -> Render:
    """A renderer of ``template``: Jinja2 as transformers sets it up, or minja (which the server renders with
    too) for a template Jinja2's sandbox refuses (Kimi K2 Thinking appends to lists)."""

    def render(history: list[dict[str, Any]], tools: list[dict[str, Any]] | None, context: dict[str, Any]) -> str:
        try:
            return ENVIRONMENT.from_string(template).render(
                messages=history, tools=tools, add_generation_prompt=True, bos_token="<s>", eos_token="</s>", **context
            )
        except jinja2.exceptions.SecurityError:
            return minja_render(tokenizer, template, history, tools, context, True)

    return render


def rendered(template: str, tokenizer: ov_genai.Tokenizer) -> str:
    """The known call's conversation through ``template``."""
    return renderer(template, tokenizer)(KNOWN_CALL, KNOWN_TOOLS, {})


def known_calls(name: str) -> list[str]:
    """The known call as format ``name`` writes it (its markup's writing, and the literal ones detection knows)."""
    chosen = TOOL_PARSERS[name]
    markup = chosen.markup
    arguments = written_arguments(markup, KNOWN_ARGUMENTS)
    return [
        markup.opening + markup.begin("get_weather", 0) + arguments + markup.call_end + markup.closing,
        *chosen.written,
    ]


def squashed(text: str) -> str:
    return re.sub(r"\s+", "", text)


@pytest.mark.parametrize("file", FAMILY_TEMPLATES)
def test_the_template_renders_the_call_as_the_format_writes_it(file: str, tokenizer: ov_genai.Tokenizer) -> None:
    """The format's written call is in the render (whitespace aside), and no format of other markup's is."""
    name, _ = FAMILY_TEMPLATES[file]
    name = ALIASES["tool"].get(name, name)
    text = squashed(rendered((TEMPLATES / file).read_text(encoding="utf-8"), tokenizer))
    found = {other for other in TOOL_PARSERS if any(squashed(call) in text for call in known_calls(other))}
    assert name in found, text
    assert {TOOL_PARSERS[other].markup for other in found} == {TOOL_PARSERS[name].markup}, found


@pytest.mark.parametrize("file", FAMILY_TEMPLATES)
def test_detection_by_rendering_picks_the_family_format(file: str, tokenizer: ov_genai.Tokenizer) -> None:
    """The server's detection (ovserve.service.parsing.detection), given the template and its renderer, names the
    family's format by the call it renders, and its reasoning format."""
    name, reasoning = FAMILY_TEMPLATES[file]
    template = (TEMPLATES / file).read_text(encoding="utf-8")
    chosen = OutputFormat.choose(None, None, template, renderer(template, tokenizer))
    assert chosen.tool_parser == ALIASES["tool"].get(name, name), chosen.tool_evidence
    if reasoning is not None:
        assert chosen.reasoning_parser == reasoning, chosen.reasoning_evidence


@pytest.mark.parametrize("file", FAMILY_TEMPLATES)
def test_template_markup_entries_find_only_their_family(file: str) -> None:
    """formats_xml's TEMPLATE_*_MARKUP entries (the fallback for templates that render no call) name this
    family's format and reasoning where the template is one of theirs, and nothing in the others."""
    name, reasoning = FAMILY_TEMPLATES[file]
    template = (TEMPLATES / file).read_text(encoding="utf-8")

    def chosen(table: list[tuple[str | tuple[str, ...], str]]) -> set[str]:
        return {
            parser
            for markup, parser in table
            if all(part in template for part in (markup if isinstance(markup, tuple) else (markup,)))
        }

    assert chosen(formats_xml.TEMPLATE_TOOL_MARKUP) == ({name} if name in formats_xml.TOOL_FORMATS else set())
    own = {reasoning} if reasoning in formats_xml.REASONING_FORMATS else set()
    assert chosen(formats_xml.TEMPLATE_REASONING_MARKUP) == own


def test_every_other_vendored_template_is_left_to_its_own_format() -> None:
    """No formats_xml template entry matches a template of another family (it would steal it)."""
    ours = set(FAMILY_TEMPLATES)
    for path in sorted(TEMPLATES.glob("*.jinja")):
        if path.name in ours:
            continue
        template = path.read_text(encoding="utf-8")
        for markup, parser in [*formats_xml.TEMPLATE_TOOL_MARKUP, *formats_xml.TEMPLATE_REASONING_MARKUP]:
            parts = markup if isinstance(markup, tuple) else (markup,)
            assert not all(part in template for part in parts), (path.name, parser)


# ---- forced calls: the grammar built from the markup, on the engine ----
# tests/service/api/test_call_markup.py forces every registered format (required, named, parallel calls off,
# after a <think> block) and reads it back; here only what is these families' own.


def test_dsml_grammar_marks_each_value_by_how_it_is_written() -> None:
    """set_alarm's hour, loud, label and mode are JSON: string="false" before each; get_weather's city is text."""
    fmt = OutputFormat("deepseek_v32")
    alarm = generate(forced_config(fmt, named_tool_choice={"type": "function", "function": {"name": "set_alarm"}}), 0)
    for key in ("hour", "loud", "label", "mode"):
        assert f'<{DSML}parameter name="{key}" string="false">' in alarm, alarm
    weather = generate(
        forced_config(fmt, named_tool_choice={"type": "function", "function": {"name": "get_weather"}}), 0
    )
    assert f'<{DSML}parameter name="city" string="true">' in weather, weather


@pytest.mark.parametrize("name", FORMATS)
def test_allowed_tools_auto_reads_back_only_allowed_calls(name: str) -> None:
    """allowed_tools "auto": the format's tag triggers one allowed call; what the engine writes reads back."""
    fmt = OutputFormat(name)
    allowed = {"mode": "auto", "tools": [{"type": "function", "function": {"name": "get_weather"}}]}
    fields = {"named_tool_choice": {"type": "allowed_tools", "allowed_tools": allowed}}
    request = parse_request(
        chat_pb2.CreateChatCompletionRequest, {"model": "m", "messages": ASK, "tools": TOOLS, **fields}
    )
    violations: list[FieldViolation] = []
    config = structured_output_config(request, violations, tools=TOOLS, markup=fmt.call_markup)
    assert config is not None and not violations, violations
    turn = read_back(fmt, generate(engine_form(config), 0))
    assert all(call.name == "get_weather" for call in turn.calls)


@pytest.mark.parametrize(("choice", "guided"), [("required", False), ("auto", True)])
def test_kimi_k3s_think_channel_ends_before_its_response_channel(choice: str, guided: bool) -> None:
    """A forced call's turn writes an empty response channel after the think channel: an element of its own after
    the block's end, so a model that went on to answer is held to the call (it stayed "inside" the block, free, to
    max_tokens). An answer fills the channel (tools offered, guided by default): the block ends where the channel
    opens, and the rest is the reply's (it never ended before: no answer could stop)."""
    fmt = OutputFormat("kimi_k3", "kimi_k3")
    think, markup = fmt.think_markup, fmt.call_markup
    assert think is not None and think.reply is not None and think.after and markup is not None
    fields = {"model": "m", "messages": ASK, "tools": BOUNDED, "tool_choice": choice}
    request = parse_request(chat_pb2.CreateChatCompletionRequest, fields)
    violations: list[FieldViolation] = []
    plan = output_plan(request, violations, tools=BOUNDED, thinking=True, markup=markup, think=think, guided=guided)
    assert plan is not None and not violations, violations
    block, after, *_ = json.loads(plan.constraint(opened=True).value)["format"]["elements"]
    if choice == "required":
        assert (block["end"], after) == (think.end, {"type": "const_string", "value": think.after})
    else:
        assert block["end"] == think.end + think.reply[0]


@pytest.mark.parametrize("name", list(formats_xml.REASONING_FORMATS))
def test_the_familys_reasoning_block_then_a_forced_call(name: str) -> None:
    """The family's own reasoning block, then its call: the grammar compiles, what it writes reads back as
    reasoning and the call, and on the engine the reply opens the block (tiny-chat rarely ends one it did not
    learn: a call if it does)."""
    fmt = OutputFormat(name, name)
    think, markup = fmt.think_markup, fmt.call_markup
    assert think is not None and markup is not None
    fields = {"model": "m", "messages": ASK, "tools": BOUNDED, "tool_choice": "required"}
    request = parse_request(chat_pb2.CreateChatCompletionRequest, fields)
    violations: list[FieldViolation] = []
    constraint = structured_output_config(request, violations, tools=BOUNDED, thinking=True, markup=markup, think=think)
    assert constraint is not None and not violations, violations
    block = json.loads(constraint.value)["format"]["elements"][0]  # then the blank lines (bounded), then the calls
    assert block["begin"] == think.begin and block["end"].startswith(think.end)
    text = block["begin"] + "Weather in Paris." + block["end"] + written(markup, WEATHER)
    turn = read_back(fmt, text)
    assert (turn.reasoning, turn.content, [call.name for call in turn.calls]) == (
        "Weather in Paris.",
        "",
        ["get_weather"],
    )
    generated = generate(engine_form(constraint), 0, thinking=True)
    turn = read_back(fmt, generated)
    assert generated.startswith(think.begin) and (turn.in_reasoning or assert_calls(turn, generated, NAMES)), generated


@pytest.mark.parametrize(("name", "section"), [("deepseek_v32", "function_calls"), ("deepseek_v4", "tool_calls")])
def test_dsml_invokes_with_a_json_object_for_arguments(name: str, section: str) -> None:
    """SGLang's DeepSeek V3.2 / V4 detectors also read an invoke whose body is the arguments as one JSON object
    ("direct JSON"); so does ovserve, in every cut. A body that is not one object leaves the section as text."""
    invoke = f'<{DSML}invoke name="get_weather">\n{{"city": "Paris", "days": 3}}\n</{DSML}invoke>'
    text = f"<{DSML}{section}>\n{invoke}\n</{DSML}{section}>"
    for chunks in feeding_deltas(text):
        assert calls(turn_of(name, chunks)) == [("get_weather", {"city": "Paris", "days": 3})], chunks
    broken = text.replace('"days": 3}', '"days": 3')
    assert (calls(turn := turn_of(name, [broken])), turn.content) == ([], broken)
