"""--tool-guided-generation: with tool_choice auto, a call the model opens is one of the tools with valid arguments.

The plan is allowed_tools' "auto" over every tool (an XGrammar triggered tag per tool on the markup's
opening tag), run here on the real engine with tiny-chat: whatever it writes reads back as calls of the
offered tools only, with arguments valid against their schemas.
"""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import openai
import openvino_genai as ov_genai
import pytest

from ovserve.clients.v1 import chat_pb2
from ovserve.service.engine.generation_config import structured_output_config as engine_form
from ovserve.service.errors import FieldViolation
from ovserve.service.models import ModelSpec
from ovserve.service.parsing import TOOL_PARSERS, OutputFormat
from ovserve.service.structured.output import structured_output_config
from tests.conftest import TEST_SETTINGS, TINY_CHAT
from tests.rest_bridge.conftest import served_with_bridge
from tests.rpc import parse
from tests.service.api.ebnf import to_regex
from tests.service.api.test_call_markup import pipeline

LOCATION = {"type": "object", "properties": {"location": {"type": "string", "maxLength": 24}},
            "required": ["location"], "additionalProperties": False}  # fmt: skip
TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": "get_weather", "parameters": LOCATION}},
    {"type": "function", "function": {"name": "get_time"}},
]
SCHEMAS = {"get_weather": LOCATION, "get_time": {"type": "object"}}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


def generate(config: ov_genai.StructuredOutputConfig, seed: int) -> str:
    """tiny-chat's reply to ASK with TOOLS in its prompt, under ``config``: sampled with ``seed``."""
    tokenizer = pipeline().get_tokenizer()
    prompt = tokenizer.apply_chat_template(ov_genai.ChatHistory(ASK), add_generation_prompt=True, tools=TOOLS)
    settings = ov_genai.GenerationConfig(
        max_new_tokens=60, do_sample=True, temperature=1.0, rng_seed=seed, apply_chat_template=False,
        structured_output_config=config,
    )  # fmt: skip
    return str(pipeline().generate(prompt, settings))


def plan(fields: dict[str, Any], *, guided: bool, parser: str = "hermes") -> tuple[Any, list[FieldViolation]]:
    request = parse(chat_pb2.CreateChatCompletionRequest, {"model": "m", "messages": ASK, "tools": TOOLS, **fields})
    violations: list[FieldViolation] = []
    markup = OutputFormat(parser).call_markup
    return structured_output_config(request, violations, tools=TOOLS, markup=markup, guided=guided), violations


def test_guided_auto_tags_every_tool_on_the_opening_tag() -> None:
    config, violations = plan({}, guided=True)
    assert config is not None and not violations, violations
    document = json.loads(config.value)["format"]
    assert document["type"] == "triggered_tags" and document["triggers"] == ["<tool_call>"]
    assert [tag["begin"] for tag in document["tags"]] == [
        '<tool_call>\n{"name": "get_weather", "arguments": ',
        '<tool_call>\n{"name": "get_time", "arguments": ',
    ]
    inside = '{"location":"Paris"}'
    assert re.fullmatch(to_regex(document["tags"][0]["content"]["grammar"]), inside)
    assert not re.fullmatch(to_regex(document["tags"][0]["content"]["grammar"]), '{"city":"Paris"}')


@pytest.mark.parametrize(
    ("fields", "guided"),
    [({}, False), ({"tool_choice": "none"}, True), ({"response_format": {"type": "json_object"}}, True)],
    ids=["not-guided", "tool-choice-none", "with-an-answer-format"],
)
def test_guidance_only_when_the_model_may_call_or_answer_freely(fields: dict[str, Any], guided: bool) -> None:
    config, violations = plan(fields, guided=guided)
    assert not violations, violations
    if "response_format" in fields:  # calls or the answer's format, as without guidance
        assert config is not None and config.kind == "grammar"
    else:
        assert config is None


@pytest.mark.parametrize("parser", sorted(TOOL_PARSERS))
def test_every_family_format_guides_each_tool(parser: str) -> None:
    """Every --tool-parser format: one triggered tag per tool on the format's opening tag; where calls open with no
    tag, a grammar of the call list or text that does not begin as a list does; no guide only where a call begins
    with its function's name. Never an error (the setting is the server's, not the request's)."""
    markup = OutputFormat(parser).call_markup
    assert markup is not None
    config, violations = plan({}, guided=True, parser=parser)
    assert not violations, violations
    if markup.tag:
        assert config is not None
        document = json.loads(config.value)["format"]
        assert document["triggers"] == [markup.tag] and len(document["tags"]) == len(TOOLS)
        for tag, tool in zip(document["tags"], TOOLS, strict=True):
            name = tool["function"]["name"]
            assert tag["begin"].startswith(markup.tag) and name in tag["begin"] + tag["content"]["grammar"]
    elif not markup.opening and markup.begin("f").startswith("f"):  # functionary v3.2, Granite pythonic: the name first
        assert config is None
    else:
        assert config is not None and config.kind == "grammar"
        assert "get_weather" in config.value and "get_time" in config.value


# A Llama 3 JSON call of each kind, as the model writes a call list (one call), and text.
LLAMA3_WEATHER = '{"name": "get_weather", "parameters": {"location": "Paris"}}'
LLAMA3_TIME = '{"name": "get_time", "parameters": {}}'


@pytest.mark.parametrize(
    ("reply", "accepted"),
    [
        ("The weather in Paris is sunny.", True),  # an answer: the model's own
        ("", True),
        ('{"temperature": 21}', True),  # JSON, but not a call list's beginning
        ('{"name"', True),  # a proper prefix of the lead: the model may stop there (max_tokens)
        (LLAMA3_WEATHER, True),
        (LLAMA3_TIME, True),
        ('{"name": "get_news", "parameters": {}}', False),  # a tool not offered
        ('{"name": "get_weather", "parameters": {"city": "Paris"}}', False),  # arguments off the schema
        ('{"name": "get_weather", "parameters": {"location": "Paris"}} and more', False),
    ],
)
def test_a_format_without_a_tag_guides_a_reply_that_begins_as_a_call(reply: str, accepted: bool) -> None:
    """llama3_json: bare JSON calls are the whole reply; a reply that begins as one (``{"name": "``) is a call of an
    offered tool with valid arguments, any other reply is left as the model writes it."""
    config, violations = plan({}, guided=True, parser="llama3_json")
    assert config is not None and not violations, violations
    assert bool(re.fullmatch(to_regex(config.value), reply, re.S)) is accepted


def test_pythonic_lists_are_guided_from_their_bracket() -> None:
    config, _ = plan({}, guided=True, parser="pythonic")
    assert config is not None
    language = to_regex(config.value)
    assert re.fullmatch(language, '[get_weather(location="Paris"), get_time()]', re.S)
    assert re.fullmatch(language, "Paris is sunny [citation needed]", re.S)  # a bracket later: text
    assert not re.fullmatch(language, "[1, 2, 3] are numbers", re.S)  # a reply that begins a list is a call list
    assert not re.fullmatch(language, '[get_news(topic="x")]', re.S)


def test_parallel_tool_calls_false_allows_one_call() -> None:
    tagged, _ = plan({"parallel_tool_calls": False}, guided=True)
    assert tagged is not None and json.loads(tagged.value)["format"]["stop_after_first"] is True
    default, _ = plan({}, guided=True)
    assert default is not None and "stop_after_first" not in json.loads(default.value)["format"]
    one, _ = plan({"parallel_tool_calls": False}, guided=True, parser="llama3_json")
    assert one is not None and not re.fullmatch(to_regex(one.value), f"{LLAMA3_WEATHER}; {LLAMA3_TIME}", re.S)
    two, _ = plan({}, guided=True, parser="llama3_json")
    assert two is not None and re.fullmatch(to_regex(two.value), f"{LLAMA3_WEATHER}; {LLAMA3_TIME}", re.S)


def test_a_format_whose_calls_begin_with_the_name_is_left_unguided() -> None:
    """functionary v3.2 writes ``get_weather\n{...}``: no text tells a call from an answer before the name, so
    guidance cannot begin (no error); allowed_tools' "auto" says why it cannot be kept."""
    config, violations = plan({}, guided=True, parser="functionary_v3_2")
    assert config is None and not violations
    allowed = {"mode": "auto", "tools": [{"type": "function", "function": {"name": "get_time"}}]}
    restricted = {"named_tool_choice": {"type": "allowed_tools", "allowed_tools": allowed}}
    config, violations = plan(restricted, guided=False, parser="functionary_v3_2")
    assert config is None and [v.field for v in violations] == ["named_tool_choice.allowed_tools.mode"]


@pytest.mark.parametrize("parser", sorted(TOOL_PARSERS))
def test_every_formats_guide_compiles_and_leaves_an_answer_unchanged(parser: str) -> None:
    """On the real engine (tiny-chat's tokenizer): each format's guide compiles, and an answer that opens no call
    is the same, token for token, as without it (greedy)."""
    config, _ = plan({}, guided=True, parser=parser)
    if config is None:
        return
    assert greedy_story(engine_form(config)) == greedy_story(None)


def greedy_story(config: ov_genai.StructuredOutputConfig | None) -> str:
    """tiny-chat's greedy answer to a request for a story (it opens no call), under ``config``."""
    tokenizer = pipeline().get_tokenizer()
    prompt = tokenizer.apply_chat_template(
        ov_genai.ChatHistory([{"role": "user", "content": "Tell me a story about a cat."}]), add_generation_prompt=True
    )
    settings = ov_genai.GenerationConfig(max_new_tokens=40, do_sample=False, apply_chat_template=False)
    if config is not None:
        settings.structured_output_config = config
    return str(pipeline().generate(prompt, settings))


def test_tiny_chat_under_guidance_calls_only_offered_tools_with_valid_arguments() -> None:
    config, _ = plan({}, guided=True)
    calls = 0
    for seed in range(1, 7):
        parser = OutputFormat("hermes").parser(prompt_tail="", schemas=SCHEMAS)
        parser.feed(generate(engine_form(config), seed))
        parser.finish()
        for call in parser.result.calls:
            assert call.name in SCHEMAS
            jsonschema.validate(json.loads(call.arguments), SCHEMAS[call.name])
            calls += 1
    assert calls  # what the check holds for: the model opened calls


def test_a_server_guides_by_default() -> None:
    """Tool-guided generation reaches the engine with no setting at all: over HTTP, every call follows its tool's
    schema; a request may turn it off (chat and Responses)."""
    guided = ModelSpec("tiny-chat", TINY_CHAT, settings=TEST_SETTINGS)
    with (
        served_with_bridge([guided]) as bridge,
        openai.OpenAI(base_url=bridge.url, api_key="k", max_retries=0) as client,
    ):
        calls = []
        for seed in range(1, 7):
            reply = client.chat.completions.create(
                model="tiny-chat", messages=ASK, tools=TOOLS, temperature=1.0, seed=seed, max_tokens=60
            )
            calls += reply.choices[0].message.tool_calls or []
        off = client.chat.completions.create(
            model="tiny-chat", messages=ASK, tools=TOOLS, max_tokens=8, extra_body={"tool_guided_generation": False}
        )
        responses_off = client.responses.create(
            model="tiny-chat", input="Weather in Paris?", max_output_tokens=16,
            extra_body={"tool_guided_generation": False},
            tools=[{"type": "function", "name": "get_time", "parameters": {"type": "object"}}],
        )  # fmt: skip
    assert off.choices[0].finish_reason in {"stop", "length", "tool_calls"} and responses_off.status in {
        "completed",
        "incomplete",
    }
    assert calls
    for call in calls:  # which tool is the model's choice; that it is an offered one, well called, the guide's
        assert call.function.name in SCHEMAS, call
        jsonschema.validate(json.loads(call.function.arguments), SCHEMAS[call.function.name])


def nested(depth: int) -> dict[str, Any]:
    """An object three properties wide, ``depth`` levels deep (121 properties at depth 4)."""
    if depth == 0:
        return {"type": "string", "maxLength": 20}
    return {"type": "object", "properties": {f"p{i}": nested(depth - 1) for i in range(3)}, "required": ["p0"]}


def test_the_tags_share_one_grammars_limits() -> None:
    """Each tool's tag has a grammar of its own, but together they are bounded as one grammar of all the calls
    is ("required"): past the total, the request is refused naming the tool where it ran out, and the tools
    after it are not converted at all."""
    many = [{"type": "function", "function": {"name": f"tool_{i}", "parameters": nested(4)}} for i in range(20)]
    request = parse(chat_pb2.CreateChatCompletionRequest, {"model": "m", "messages": ASK, "tools": many})
    violations: list[FieldViolation] = []
    config = structured_output_config(request, violations, tools=many, markup=OutputFormat("hermes").call_markup,
                                      guided=True)  # fmt: skip
    assert config is None
    assert [v.field for v in violations] == ["tools[17].function.parameters.properties.p0.properties.p0.properties"]
    assert "too many properties" in violations[0].description
