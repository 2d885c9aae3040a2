"""tool_choice {"type": "allowed_tools"}: every tool stays in the prompt, the model may call only the allowed ones.

``mode: "required"`` is a forced call among the allowed tools; ``mode: "auto"``
lets the model answer in free text, and any call it opens (``<tool_call>``) must
be one of them (an XGrammar triggered tag per allowed tool). tiny-chat, asked
about the weather with ``get_weather`` and ``get_time`` offered, calls
``get_weather`` on most seeds when free to: the same seeds with only
``get_time`` allowed must never call it.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import openai
import pytest

from tests.rest_bridge.conftest import RunningBridge, http_request

MODEL = "tiny-chat"
CITY = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}}, "required": ["city"],
        "additionalProperties": False}  # fmt: skip
TOOLS: list[Any] = [{"type": "function", "function": {"name": name, "parameters": CITY}}
                    for name in ("get_weather", "get_time")]  # fmt: skip
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
SEEDS = range(1, 7)


def allowed(mode: str, *names: str) -> Any:
    """Chat's allowed_tools tool choice."""
    tools = [{"type": "function", "function": {"name": name}} for name in names]
    return {"type": "allowed_tools", "allowed_tools": {"mode": mode, "tools": tools}}


def called(client: openai.OpenAI, choice: Any, seed: int) -> list[str]:
    """The functions one reply calls (arguments checked against their schema)."""
    reply = client.chat.completions.create(
        model=MODEL, messages=ASK, tools=TOOLS, tool_choice=choice, temperature=1.0, seed=seed, max_tokens=80
    )
    choice_ = reply.choices[0]
    calls = choice_.message.tool_calls or []
    for call in calls:
        jsonschema.validate(json.loads(call.function.arguments), CITY)
    assert choice_.finish_reason == ("tool_calls" if calls else "stop")
    return [call.function.name for call in calls]


def test_auto_calls_only_the_allowed_tools(client: openai.OpenAI) -> None:
    free = [called(client, "auto", seed) for seed in SEEDS]
    restricted = [called(client, allowed("auto", "get_time"), seed) for seed in SEEDS]
    assert any("get_weather" in names for names in free)  # what the restriction must prevent
    assert all(set(names) <= {"get_time"} for names in restricted), restricted


def test_required_calls_an_allowed_tool_every_time(client: openai.OpenAI) -> None:
    for seed in SEEDS:
        names = called(client, allowed("required", "get_time"), seed)
        assert names and set(names) == {"get_time"}


def test_auto_leaves_free_text_possible(client: openai.OpenAI) -> None:
    """Without a reason to call, the model answers in text: auto is not a forced call."""
    texts = []
    for seed in SEEDS:
        reply = client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "Tell me a story."}], tools=TOOLS,
            tool_choice=allowed("auto", "get_time"), temperature=1.0, seed=seed, max_tokens=40,
        )  # fmt: skip
        message = reply.choices[0].message
        assert all(call.function.name == "get_time" for call in message.tool_calls or [])
        texts += [message.content] if message.content and not message.tool_calls else []
    assert texts


def test_streamed_allowed_call(client: openai.OpenAI) -> None:
    choice = allowed("required", "get_time")
    stream = client.chat.completions.create(
        model=MODEL, messages=ASK, tools=TOOLS, tool_choice=choice, max_tokens=80, stream=True
    )
    chunks = list(stream)
    names = [t.function.name for c in chunks if c.choices for t in c.choices[0].delta.tool_calls or [] if t.function]
    assert "get_time" in names and "get_weather" not in names
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["tool_calls"]


def test_responses_allowed_tools_and_their_echo(client: openai.OpenAI) -> None:
    tools: Any = [{"type": "function", "name": name, "parameters": CITY} for name in ("get_weather", "get_time")]
    choice: Any = {"type": "allowed_tools", "mode": "required", "tools": [{"type": "function", "name": "get_time"}]}
    response = client.responses.create(
        model=MODEL, input="Weather in Paris?", tools=tools, tool_choice=choice, max_output_tokens=60, store=False
    )
    assert [item.name for item in response.output if item.type == "function_call"] == ["get_time"]
    assert response.tool_choice.model_dump() == choice  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("choice", "param", "words"),
    [
        (allowed("auto", "get_date"), "tool_choice", "no tool named"),
        (allowed("sometimes", "get_time"), "tool_choice", "not one of auto, required"),
        (allowed("auto"), "tool_choice", "at least one"),
        ({"type": "allowed_tools"}, "tool_choice", "required"),
        ({"type": "magic", "function": {"name": "get_time"}}, "tool_choice", "unknown type"),
    ],
)
def test_bad_allowed_tools_are_refused_naming_the_field(
    bridge: RunningBridge, choice: Any, param: str, words: str
) -> None:
    body = {"model": MODEL, "messages": ASK, "tools": TOOLS, "tool_choice": choice}
    reply = http_request(bridge.port, "POST", "/v3/chat/completions", body)
    assert reply.status == 400, reply.body
    error = reply.json()["error"]
    assert error["param"].startswith(param) and words in error["message"], error


def test_a_reasoning_model_thinks_then_calls_only_allowed_tools(client: openai.OpenAI) -> None:
    for seed in SEEDS[:3]:
        reply = client.chat.completions.create(
            model=MODEL, messages=ASK, tools=TOOLS, tool_choice=allowed("auto", "get_time"), temperature=1.0,
            seed=seed, max_tokens=300, extra_body={"chat_template_kwargs": {"enable_thinking": True}},
        )  # fmt: skip
        message = reply.choices[0].message
        assert (message.model_extra or {}).get("reasoning_content")
        assert all(call.function.name == "get_time" for call in message.tool_calls or [])


def test_auto_on_an_untagged_markup_guides_a_reply_that_begins_as_a_call() -> None:
    """A model whose calls are the whole reply ([f(x=1)]): under auto, a reply that begins as a call list is a call
    of an allowed tool, any other reply is text; required is the call list alone."""
    import re

    from ovserve.clients.v1 import chat_pb2
    from ovserve.service.parsing.markup import PYTHONIC
    from ovserve.service.structured.output import structured_output_config
    from tests.rpc import parse
    from tests.service.api.ebnf import to_regex

    for mode in ("auto", "required"):
        body = {"model": "m", "messages": ASK, "tools": TOOLS, "named_tool_choice": allowed(mode, "get_time")}
        request = parse(chat_pb2.CreateChatCompletionRequest, body)
        violations: list[Any] = []
        constraint = structured_output_config(request, violations, tools=TOOLS, markup=PYTHONIC)
        assert constraint is not None and not violations, violations
        assert "get_time(" in constraint.value and "get_weather" not in constraint.value
        language = to_regex(constraint.value)
        assert re.fullmatch(language, '[get_time(city="Paris")]', re.S)
        assert not re.fullmatch(language, '[get_weather(city="Paris")]', re.S)
        assert bool(re.fullmatch(language, "It is noon in Paris.", re.S)) is (mode == "auto")
