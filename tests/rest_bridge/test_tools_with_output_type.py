"""Tools together with structured output, as agent frameworks send them (the OpenAI Agents SDK with an output_type).

The SDK's turn: tools (strict schemas) and ``response_format`` json_schema
``final_output`` in the same request; the model calls a tool; the tool's
result goes back with the same tools and format; the final answer must follow
the schema. ``tool_choice: "required"`` (the SDK's ``ModelSettings``) forces
the call, and the SDK then resets it to auto. With auto the reply may be either
a call with valid arguments or an answer valid against the schema: the grammar
offers both, and tiny-chat takes whichever, so the test accepts either and
checks it.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import openai
import pytest

MODEL = "tiny-chat"
# Bounded strings (pydantic's max_length): a model as small as tiny-chat may never close a free string (seed 3's
# forced call after its reasoning wrote a city to max_tokens once the blank line after </think> became its own).
WEATHER_ARGS = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 24}}, "required": ["city"],
                "additionalProperties": False}  # fmt: skip
TOOLS: list[Any] = [{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
                                                      "parameters": WEATHER_ARGS, "strict": True}}]  # fmt: skip
ANSWER = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 24},
          "summary": {"type": "string", "maxLength": 60}}, "required": ["city", "summary"],
          "additionalProperties": False}  # fmt: skip
FINAL_OUTPUT: Any = {"type": "json_schema", "json_schema": {"name": "final_output", "schema": ANSWER, "strict": True}}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


def check_reply(message: Any) -> str:
    """The reply is a valid call or a valid answer; which one."""
    if message.tool_calls:
        for call in message.tool_calls:
            assert call.function.name == "get_weather"
            jsonschema.validate(json.loads(call.function.arguments), WEATHER_ARGS)
        return "call"
    jsonschema.validate(json.loads(message.content), ANSWER)
    return "answer"


def test_the_agents_sdk_turn_calls_the_tool_then_answers_in_the_schema(client: openai.OpenAI) -> None:
    first = client.chat.completions.create(
        model=MODEL, messages=ASK, tools=TOOLS, response_format=FINAL_OUTPUT, tool_choice="required",
        parallel_tool_calls=False, max_tokens=60,
    )  # fmt: skip
    message = first.choices[0].message
    assert first.choices[0].finish_reason == "tool_calls" and check_reply(message) == "call"
    call = message.tool_calls[0]  # type: ignore[index]
    result = '{"temperature_c": 21, "sky": "clear"}'
    history = [*ASK,
               {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
               {"role": "tool", "tool_call_id": call.id, "content": result}]  # fmt: skip
    # The SDK resets tool_choice after the call; "none" makes this turn's reply the final answer.
    final = client.chat.completions.create(
        model=MODEL, messages=history, tools=TOOLS, response_format=FINAL_OUTPUT, tool_choice="none", max_tokens=400
    )
    assert check_reply(final.choices[0].message) == "answer"


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_with_auto_the_reply_is_a_valid_call_or_a_valid_answer(client: openai.OpenAI, seed: int, stream: bool) -> None:
    fields: dict[str, Any] = {"model": MODEL, "messages": ASK, "tools": TOOLS, "response_format": FINAL_OUTPUT,
                              "temperature": 1.0, "seed": seed, "max_tokens": 400}  # fmt: skip
    unary = client.chat.completions.create(**fields).choices[0]
    kind = check_reply(unary.message)
    assert unary.finish_reason == ("tool_calls" if kind == "call" else "stop")
    if stream:
        chunks = [c for c in client.chat.completions.create(stream=True, **fields) if c.choices]
        content = "".join(c.choices[0].delta.content or "" for c in chunks)
        calls = [t for c in chunks for t in c.choices[0].delta.tool_calls or []]
        if kind == "answer":
            assert content == unary.message.content
        else:
            assert calls and calls[0].function is not None and calls[0].function.name == "get_weather"


def test_a_forced_call_with_a_format_is_a_call(client: openai.OpenAI) -> None:
    named = {"type": "function", "function": {"name": "get_weather"}}
    reply = client.chat.completions.create(
        model=MODEL, messages=ASK, tools=TOOLS, response_format={"type": "json_object"}, tool_choice=named,
        max_tokens=60,
    )  # fmt: skip
    assert check_reply(reply.choices[0].message) == "call"


def test_responses_with_tools_and_text_format(client: openai.OpenAI) -> None:
    """instructor's RESPONSES_TOOLS mode and the SDK on the Responses API: tools beside text.format."""
    tools: Any = [{"type": "function", "name": "get_weather", "parameters": WEATHER_ARGS, "strict": True}]
    text: Any = {"format": {"type": "json_schema", "name": "final_output", "schema": ANSWER, "strict": True}}
    forced = client.responses.create(model=MODEL, input="Weather in Paris?", tools=tools, text=text,
                                     tool_choice="required", max_output_tokens=60, store=False)  # fmt: skip
    calls = [item for item in forced.output if item.type == "function_call"]
    assert calls and calls[0].name == "get_weather"
    jsonschema.validate(json.loads(calls[0].arguments), WEATHER_ARGS)
    answered = client.responses.create(model=MODEL, input="Weather in Paris?", tools=tools, text=text,
                                       tool_choice="none", max_output_tokens=400, store=False)  # fmt: skip
    jsonschema.validate(json.loads(answered.output_text), ANSWER)


def test_the_grammar_offers_both_a_call_and_the_answer() -> None:
    """With tools (auto) and a JSON format, one grammar: the model's call markup, or the answer's JSON."""
    from ovserve.clients.v1 import chat_pb2
    from ovserve.service.parsing.markup import HERMES
    from ovserve.service.structured.output import structured_output_config
    from tests.rpc import parse

    body = {"model": "m", "messages": ASK, "tools": TOOLS, "response_format": FINAL_OUTPUT}
    request = parse(chat_pb2.CreateChatCompletionRequest, body)
    template_tools = [{"type": "function", "function": TOOLS[0]["function"]}]
    violations: list[Any] = []
    constraint = structured_output_config(request, violations, tools=template_tools, markup=HERMES)
    assert not violations and constraint is not None and constraint.kind == "grammar"
    assert "<tool_call>" in constraint.value and '\\"summary\\"' in constraint.value
    assert constraint.value.startswith("root ::= (")  # calls | answer
    none = parse(chat_pb2.CreateChatCompletionRequest, {**body, "tool_choice": "none"})
    only_answer = structured_output_config(none, [], tools=template_tools, markup=HERMES)
    assert only_answer is not None and "<tool_call>" not in only_answer.value


THINKING = {"chat_template_kwargs": {"enable_thinking": True}}


@pytest.mark.parametrize("tool_choice", ["auto", "required"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_reasoning_model_thinks_first_then_calls_or_answers(
    client: openai.OpenAI, tool_choice: str, seed: int
) -> None:
    """With thinking on, the reasoning block comes first and stays free; the constraint starts after it."""
    reply = client.chat.completions.create(
        model=MODEL, messages=ASK, tools=TOOLS, response_format=FINAL_OUTPUT, tool_choice=tool_choice,
        temperature=1.0, seed=seed, max_tokens=400, extra_body=THINKING,
    )  # fmt: skip
    message = reply.choices[0].message
    reasoning = (message.model_extra or {}).get("reasoning_content")
    assert reasoning and "<think>" not in reasoning and "</think>" not in reasoning
    kind = check_reply(message)
    assert kind == "call" or tool_choice == "auto"
    assert reply.choices[0].finish_reason == ("tool_calls" if kind == "call" else "stop")
