"""Each tool format's markup: the grammar of a forced call writes what that format's parser reads back.

Every grammar is run on the real engine (XGrammar inside openvino_genai, on the bundled tiny-chat):
what the model writes under it must come back from the format's parser as calls with the forced
names and arguments valid against the tools' schemas, with nothing left over as text.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from typing import Any

import jsonschema
import openvino_genai as ov_genai
import pytest

from ovserve.clients.v1 import chat_pb2
from ovserve.service.engine.generation_config import structured_output_config as engine_form
from ovserve.service.errors import FieldViolation
from ovserve.service.models import BUNDLED_MODEL, BUNDLED_MODELS_DIR
from ovserve.service.parsing import REASONING_PARSERS, TOOL_PARSERS, OutputFormat, ParsedTurn
from ovserve.service.parsing.markup import (
    DEEPSEEK_V3,
    DEEPSEEK_V31,
    GEMMA4,
    GEMMA4_THINK,
    GLM45,
    GRANITE,
    GRANITE_TAGGED_THINK,
    GRANITE_THINK,
    HARMONY,
    HARMONY_THINK,
    HERMES,
    KIMI_K2,
    LLAMA3_JSON,
    MISTRAL,
    PHI4_MINI_JSON,
    PYTHONIC,
    QWEN3_CODER,
    TAGGED_ARGUMENTS,
    THINK,
)
from ovserve.service.structured.json_grammar import GrammarBuilder, SchemaError, python_literal
from ovserve.service.structured.output import MAX_PARALLEL_CALLS, structured_output_config
from tests.rpc import parse
from tests.service.api.ebnf import to_regex

# Every tool format, under its first --tool-parser name (aliases share their format's entry), so that a format
# registered later (service/parsing/formats_*.py) is forced and read back here too.
FORMATS = list({id(fmt): name for name, fmt in reversed(TOOL_PARSERS.items())}.values())[::-1]
CORE = ["hermes", "llama3_json", "pythonic", "mistral", "deepseek_v3", "deepseek_v31", "kimi_k2", "phi4_mini_json",
        "granite", "qwen3_coder", "glm45", "openai", "gemma4"]  # fmt: skip
ASK = [{"role": "user", "content": "What is the weather like in Paris?"}]
# Parameters that show what differs between dialects: booleans, null, enums, nesting, arrays, bounds.
TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 16}, "unit": {"enum": ["celsius", "fahrenheit"]}},
        "required": ["city", "unit"],
    }}},
    {"type": "function", "function": {"name": "set_alarm", "parameters": {
        "type": "object",
        "properties": {"hour": {"type": "integer", "minimum": 0, "maximum": 23}, "loud": {"type": "boolean"},
                       "label": {"type": "null"}, "mode": {"const": {"repeat": False, "days": [1, None]}}},
        "required": ["hour", "loud", "label", "mode"],
        "additionalProperties": False,
    }}},
    {"type": "function", "function": {"name": "book_trip", "parameters": {
        "type": "object",
        "properties": {
            "traveller": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
                                                           "vip": {"type": ["boolean", "null"]}},
                          "required": ["name", "vip"]},
            "cities": {"type": "array", "items": {"type": "string", "maxLength": 10}, "minItems": 1, "maxItems": 2},
        },
        "required": ["traveller", "cities"],
    }}},
    {"type": "function", "function": {"name": "get_time"}},  # no parameters: any arguments object
]  # fmt: skip
# "required" lets the model make up to MAX_PARALLEL_CALLS calls: with bounded arguments only, so the list
# closes within max_tokens (a list cut off before its closing keeps only its complete calls:
# ovserve.service.parsing.cut_lists,
# and these tests want every call the grammar wrote back).
BOUNDED = TOOLS[:3]
MAX_TOKENS = 1300
NAMES = [tool["function"]["name"] for tool in TOOLS]
SCHEMAS = {tool["function"]["name"]: tool["function"].get("parameters", {"type": "object"}) for tool in TOOLS}


@functools.cache
def pipeline() -> ov_genai.LLMPipeline:
    return ov_genai.LLMPipeline(str(BUNDLED_MODELS_DIR / BUNDLED_MODEL), "CPU")


def forced_config(
    fmt: OutputFormat, thinking: bool = False, tools: list[dict[str, Any]] = TOOLS, **fields: Any
) -> ov_genai.StructuredOutputConfig:
    """The constraint a chat request with ``tools`` and ``fields`` gets on a model of this output format."""
    request = parse(chat_pb2.CreateChatCompletionRequest, {"model": "m", "messages": ASK, "tools": tools, **fields})
    violations: list[FieldViolation] = []
    config = structured_output_config(
        request, violations, tools=tools, thinking=thinking, markup=fmt.call_markup, think=fmt.think_markup
    )
    assert config is not None and not violations, violations
    return engine_form(config)


def generate(config: ov_genai.StructuredOutputConfig, seed: int, thinking: bool = False) -> str:
    """tiny-chat's reply under the constraint: greedy for seed 0, sampled otherwise."""
    history = ov_genai.ChatHistory(ASK)
    prompt = (
        pipeline()
        .get_tokenizer()
        .apply_chat_template(
            history, add_generation_prompt=True, tools=TOOLS, extra_context={"enable_thinking": thinking}
        )
    )
    settings = ov_genai.GenerationConfig(
        max_new_tokens=MAX_TOKENS,  # room for the list to close, or for a <think> block (only the model ends it)
        do_sample=seed > 0,
        temperature=1.0,
        rng_seed=seed,
        apply_chat_template=False,
        structured_output_config=config,
    )
    return str(pipeline().generate(prompt, settings))


def read_back(fmt: OutputFormat, text: str) -> ParsedTurn:
    parser = fmt.parser(prompt_tail="", schemas=SCHEMAS)  # as the server gives it: the request's tools
    parser.feed(text)
    parser.finish()
    return parser.result


def assert_calls(turn: ParsedTurn, text: str, allowed: list[str]) -> list[str]:
    """Calls only (no text left over), each with an allowed name and valid arguments; their names."""
    assert turn.calls, f"no call read back from {text!r}"
    assert turn.content == "", f"text left over: {turn.content!r} from {text!r}"
    for call in turn.calls:
        assert call.name in allowed, text
        jsonschema.validate(json.loads(call.arguments), SCHEMAS[call.name])
    return [call.name for call in turn.calls]


def test_aliases_share_their_format_and_every_name_is_covered() -> None:
    assert TOOL_PARSERS["qwen"] is TOOL_PARSERS["hermes"]
    assert TOOL_PARSERS["llama3_pythonic"] is TOOL_PARSERS["pythonic"]
    assert {TOOL_PARSERS[name].markup for name in TOOL_PARSERS} == {TOOL_PARSERS[name].markup for name in FORMATS}
    assert FORMATS[: len(CORE)] == CORE and len(set(FORMATS)) == len(FORMATS)
    assert [TOOL_PARSERS[name].markup for name in CORE] == [
        HERMES, LLAMA3_JSON, PYTHONIC, MISTRAL, DEEPSEEK_V3, DEEPSEEK_V31, KIMI_K2, PHI4_MINI_JSON, GRANITE,
        QWEN3_CODER, GLM45, HARMONY, GEMMA4,
    ]  # fmt: skip
    own = {"granite": GRANITE_THINK, "granite_think": GRANITE_TAGGED_THINK, "openai": HARMONY_THINK,
           "openai_gptoss": HARMONY_THINK, "gemma4": GEMMA4_THINK}  # fmt: skip
    assert all(REASONING_PARSERS[name] == own.get(name, THINK) for name in ("think", "qwen3", "deepseek_r1", *own))
    assert REASONING_PARSERS["granite"] == GRANITE_THINK
    assert OutputFormat("mistral", "qwen3").call_markup == MISTRAL and OutputFormat().call_markup is None


@pytest.mark.parametrize("name", FORMATS)
def test_two_calls_written_from_the_markup_read_back(name: str) -> None:
    """Opening, separator and closing as declared: what tiny-chat rarely writes (a second call) reads back too."""
    fmt = OutputFormat(name)
    markup = fmt.call_markup
    assert markup is not None
    arguments = ['city="Paris", unit="celsius"', "hour=7, loud=True, label=None"]
    if markup.arguments == "json":
        arguments = ['{"city": "Paris", "unit": "celsius"}', '{"hour": 7, "loud": true, "label": null}']
    if markup.arguments in TAGGED_ARGUMENTS:  # one tagged member each: strings raw, other values JSON
        form = TAGGED_ARGUMENTS[markup.arguments]
        members = [{"city": "Paris", "unit": "celsius"}, {"hour": "7", "loud": "true", "label": "null"}]
        arguments = [form.write(m) for m in members]  # the dialect's own writing (MiniMax-M3 closes by name)
    # A format of one call a turn (GigaChat) writes one; harmony's turn ends at a call, but its reader takes several.
    count = 2 if markup.parallel or name == "openai" else 1
    tools = zip(["get_weather", "set_alarm"][:count], arguments[:count], strict=True)
    calls = [markup.begin(tool) + args + markup.call_end for tool, args in tools]
    text = markup.opening + markup.separator.join(calls) + markup.closing
    turn = read_back(fmt, text)
    assert (
        turn.content == ""
        and [(c.name, json.loads(c.arguments)) for c in turn.calls]
        == [
            ("get_weather", {"city": "Paris", "unit": "celsius"}),
            ("set_alarm", {"hour": 7, "loud": True, "label": None}),
        ][:count]
    ), text


@pytest.mark.parametrize("seed", [0, 1, 2], ids=["greedy", "seed1", "seed2"])
@pytest.mark.parametrize("name", FORMATS)
def test_required_calls_read_back(name: str, seed: int) -> None:
    fmt = OutputFormat(name)
    text = generate(forced_config(fmt, tools=BOUNDED, tool_choice="required"), seed)
    calls = assert_calls(read_back(fmt, text), text, NAMES)
    assert len(calls) <= MAX_PARALLEL_CALLS


@pytest.mark.parametrize("tool", NAMES)
@pytest.mark.parametrize("name", FORMATS)
def test_named_call_reads_back(name: str, tool: str) -> None:
    fmt = OutputFormat(name)
    config = forced_config(fmt, named_tool_choice={"type": "function", "function": {"name": tool}})
    for seed in (0, 3):
        text = generate(config, seed)
        assert assert_calls(read_back(fmt, text), text, [tool]) == [tool]


@pytest.mark.parametrize("name", FORMATS)
def test_parallel_tool_calls_false_is_one_call(name: str) -> None:
    fmt = OutputFormat(name)
    config = forced_config(fmt, tool_choice="required", parallel_tool_calls=False)  # one call: any tool fits
    for seed in (0, 4, 5):
        text = generate(config, seed)
        assert len(assert_calls(read_back(fmt, text), text, NAMES)) == 1


@pytest.mark.parametrize("name", FORMATS)
def test_thinking_then_the_formats_call(name: str) -> None:
    """The reasoning block uses the reasoning parser's delimiters; the call after it is the format's."""
    fmt = OutputFormat(name, "qwen3")
    config = forced_config(
        fmt, thinking=True, named_tool_choice={"type": "function", "function": {"name": "get_weather"}}
    )
    text = generate(config, 0, thinking=True)
    turn = read_back(fmt, text)
    assert text.startswith(THINK.begin) and turn.reasoning and not turn.in_reasoning
    assert assert_calls(turn, text, ["get_weather"]) == ["get_weather"]


def test_pythonic_values_are_python_literals() -> None:
    """set_alarm's booleans, null and constant come out as True / None; JSON's spelling would not parse."""
    fmt = OutputFormat("pythonic")
    text = generate(forced_config(fmt, named_tool_choice={"type": "function", "function": {"name": "set_alarm"}}), 0)
    assert (
        text.startswith("[set_alarm(hour=") and "label=None" in text and 'mode={"repeat":False,"days":[1,None]}' in text
    )
    arguments = json.loads(read_back(fmt, text).calls[0].arguments)
    assert arguments["label"] is None and arguments["mode"] == {"repeat": False, "days": [1, None]}
    assert isinstance(arguments["loud"], bool)


@pytest.mark.parametrize(
    "value", [True, None, -0.5, 12, 'a/b "q" \\ é 😀\n', [False, {"k": None}], {"x": [1, {"y": "z"}]}]
)
def test_python_literal_reads_back_with_literal_eval(value: Any) -> None:
    assert ast.literal_eval(python_literal(value)) == value


def test_keyword_arguments_refuse_what_a_call_cannot_spell() -> None:
    refused = [
        (
            {"type": "object", "properties": {"not-an-identifier": {"type": "string"}}},
            ("properties", "not-an-identifier"),
        ),
        ({"type": "object", "properties": {"class": {"type": "string"}}}, ("properties", "class")),
        ({"type": "array"}, ("type",)),
        ({"anyOf": [{"type": "object"}]}, ("anyOf",)),
    ]
    for schema, path in refused:
        with pytest.raises(SchemaError) as raised:
            GrammarBuilder("python").add(schema)
        assert raised.value.path == path, raised.value.message


def test_pythonic_refuses_a_tool_name_that_is_not_an_identifier() -> None:
    tools = [{"type": "function", "function": {"name": "get-weather", "parameters": {"type": "object"}}}]
    request = parse(chat_pb2.CreateChatCompletionRequest, {"model": "m", "messages": ASK, "tools": tools,
                                                           "tool_choice": "required"})  # fmt: skip
    violations: list[FieldViolation] = []
    assert structured_output_config(request, violations, tools=tools, markup=PYTHONIC) is None
    assert [v.field for v in violations] == ["tools[0].function.name"]
    violations = []
    assert structured_output_config(request, violations, tools=tools, markup=MISTRAL) is not None and not violations


@pytest.mark.parametrize("name", ["openai", "gemma4"])
def test_the_formats_own_reasoning_block_then_the_call(name: str) -> None:
    """gpt-oss: the analysis message, the next message's header (after the block's end: a model that ended the
    block and went on otherwise stays inside it), then one call (<|call|> ends its turn); Gemma 4: the thought
    channel, then the calls. The grammar compiles and what it writes reads back."""
    fmt = OutputFormat(name, name)
    request = parse(chat_pb2.CreateChatCompletionRequest, {"model": "m", "messages": ASK, "tools": BOUNDED,
                                                           "tool_choice": "required"})  # fmt: skip
    violations: list[FieldViolation] = []
    constraint = structured_output_config(
        request, violations, tools=BOUNDED, thinking=True, markup=fmt.call_markup, think=fmt.think_markup
    )
    assert constraint is not None and not violations, violations
    block, *follows, calls = json.loads(constraint.value)["format"]["elements"]
    think, markup = fmt.think_markup, fmt.call_markup
    assert think is not None and markup is not None and block["begin"] == think.begin
    header = [{"type": "const_string", "value": "<|start|>assistant"}]
    assert (block["end"], follows) == {"openai": ("<|end|>", header), "gemma4": ("<channel|>", [])}[name]
    assert ("{0," in calls["grammar"].splitlines()[0]) is markup.parallel  # root: gpt-oss makes no second call
    after = "".join(follow["value"] for follow in follows)
    written = block["begin"] + "\nWeather in Paris.\n" + block["end"] + after + markup.begin("get_weather")
    turn = read_back(fmt, written + '{"city": "Paris", "unit": "celsius"}' + markup.call_end)
    assert turn.reasoning == "Weather in Paris." and [c.name for c in turn.calls] == ["get_weather"], turn
    # On the engine (tiny-chat rarely ends a block it did not learn): reasoning first, a call if it ends.
    text = generate(engine_form(constraint), 0, thinking=True)
    turn = read_back(fmt, text)
    assert text.startswith(think.begin) and (turn.in_reasoning or assert_calls(turn, text, NAMES)), text


@pytest.mark.parametrize("name", ["deepseek_v3", "deepseek_v31", "kimi_k2"])
def test_allowed_tools_auto_tags_a_section_of_one_allowed_call(name: str) -> None:
    """allowed_tools "auto" on a format whose calls sit in a section: the section's token triggers a tag
    holding one allowed call (Kimi K2's call number as digits), which the parser reads back."""
    fmt = OutputFormat(name)
    markup = fmt.call_markup
    assert markup is not None
    allowed = {"mode": "auto", "tools": [{"type": "function", "function": {"name": "get_weather"}}]}
    fields = {"named_tool_choice": {"type": "allowed_tools", "allowed_tools": allowed}}
    request = parse(chat_pb2.CreateChatCompletionRequest, {"model": "m", "messages": ASK, "tools": TOOLS, **fields})
    violations: list[FieldViolation] = []
    config = structured_output_config(request, violations, tools=TOOLS, markup=markup)
    assert config is not None and not violations, violations
    document = json.loads(config.value)["format"]
    assert document["triggers"] == [markup.opening] and len(document["tags"]) == 1
    tag = document["tags"][0]
    call = markup.begin("get_weather", 12) + '{"city":"Paris","unit":"celsius"}' + markup.call_end
    text = markup.opening + call + markup.closing
    assert text.startswith(tag["begin"]) and text.endswith(tag["end"]), (tag, text)
    inside = text[len(tag["begin"]) : len(text) - len(tag["end"])]
    assert re.fullmatch(to_regex(tag["content"]["grammar"]), inside), (tag, inside)
    turn = read_back(fmt, "Let me see. " + text)
    assert turn.content == "Let me see." and [c.name for c in turn.calls] == ["get_weather"]
    # The engine takes it: whatever tiny-chat writes under it reads back with only the allowed call.
    written = read_back(fmt, generate(engine_form(config), 0))
    assert all(c.name == "get_weather" for c in written.calls)
