"""Forced tool calls end to end for every tool format: tiny-chat served once per --tool-parser.

One server serves the bundled tiny-chat four times, each under its own name and tool parser. A
forced call (``tool_choice: "required"`` or a named tool) makes even tiny-chat write that format's
markup, and the reply comes back as ``tool_calls`` with finish_reason ``tool_calls``, unary and
streamed alike; a Responses request gets the same calls as function_call items.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import grpc
import jsonschema
import pytest

from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc, common_pb2, response_pb2, response_pb2_grpc
from ovserve.service.models import ModelSpec
from ovserve.service.parsing import TOOL_PARSERS
from tests.conftest import TEST_SETTINGS, TINY_CHAT, channel_to
from tests.rpc import parse

# Every format; aliases share these (test_call_markup).
FORMATS = ["hermes", "llama3_json", "pythonic", "mistral", "deepseek_v3", "deepseek_v31", "kimi_k2", "phi4_mini_json",
           "granite", "openai", "gemma4", "qwen3_coder", "glm45"]  # fmt: skip
ASK = [{"role": "user", "content": "What is the weather like in Paris?"}]
# Bounded arguments, so even a list of MAX_PARALLEL_CALLS calls closes within max_tokens (DeepSeek V3's
# markup, spelled out in tiny-chat's tokens, takes over 800 for 8 calls).
TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": "get_weather", "description": "Get the weather in a city.",
     "parameters": {"type": "object",
                    "properties": {"city": {"type": "string", "maxLength": 16},
                                   "unit": {"enum": ["celsius", "fahrenheit"]}},
                    "required": ["city", "unit"]}}},
    {"type": "function", "function": {"name": "set_alarm", "description": "Set an alarm.",
     "parameters": {"type": "object",
                    "properties": {"hour": {"type": "integer", "minimum": 0, "maximum": 23},
                                   "loud": {"type": "boolean"}, "label": {"type": ["string", "null"], "maxLength": 8}},
                    "required": ["hour", "loud", "label"], "additionalProperties": False}}},
]  # fmt: skip
SCHEMAS = {tool["function"]["name"]: tool["function"]["parameters"] for tool in TOOLS}
CHOICES = {
    "required": {"tool_choice": "required"},
    "named": {"named_tool_choice": {"type": "function", "function": {"name": "set_alarm"}}},
}
TOOL_CALLS = common_pb2.FINISH_REASON_TOOL_CALLS


@pytest.fixture(scope="module")
def formats_channel() -> Iterator[grpc.Channel]:
    """tiny-chat as ``tiny-<format>`` for each format, on one server."""
    with channel_to([ModelSpec(f"tiny-{name}", TINY_CHAT, settings=TEST_SETTINGS, tool_parser=name)
                     for name in FORMATS]) as channel:  # fmt: skip
        yield channel


def body(name: str, choice: str) -> dict[str, Any]:
    return {"model": f"tiny-{name}", "messages": ASK, "tools": TOOLS, "temperature": 0, "max_tokens": 1100,
            **CHOICES[choice]}  # fmt: skip


def unary_calls(chat: chat_pb2_grpc.ChatServiceStub, request: dict[str, Any]) -> tuple[list[tuple[str, Any]], int]:
    choice = chat.CreateChatCompletion(parse(chat_pb2.CreateChatCompletionRequest, request)).choices[0]
    assert not choice.message.HasField("content"), f"text beside the calls: {choice.message.content!r}"
    calls = [(call.function.name, json.loads(call.function.arguments)) for call in choice.message.tool_calls]
    return calls, choice.finish_reason


def streamed_calls(chat: chat_pb2_grpc.ChatServiceStub, request: dict[str, Any]) -> tuple[list[tuple[str, Any]], int]:
    """The stream's tool-call deltas joined by index, and its one finish_reason; no content on the way."""
    calls: dict[int, list[str]] = {}
    finish = []
    for chunk in chat.StreamChatCompletion(parse(chat_pb2.StreamChatCompletionRequest, request)):
        for choice in chunk.choices:
            assert not choice.delta.content, choice.delta.content
            for call in choice.delta.tool_calls:
                name, arguments = calls.setdefault(call.index, ["", ""])
                calls[call.index] = [name + call.function.name, arguments + call.function.arguments]
            if choice.finish_reason:
                finish.append(choice.finish_reason)
    assert len(finish) == 1 and sorted(calls) == list(range(len(calls)))
    return [(name, json.loads(arguments)) for name, arguments in (calls[i] for i in sorted(calls))], finish[0]


@pytest.mark.parametrize("choice", CHOICES)
@pytest.mark.parametrize("name", FORMATS)
def test_forced_call_reads_back_as_tool_calls(formats_channel: grpc.Channel, name: str, choice: str) -> None:
    chat = chat_pb2_grpc.ChatServiceStub(formats_channel)
    calls, finish = unary_calls(chat, body(name, choice))
    assert finish == TOOL_CALLS and calls
    for tool, arguments in calls:
        jsonschema.validate(arguments, SCHEMAS[tool])
    if choice == "named":
        assert [tool for tool, _ in calls] == ["set_alarm"]
    assert streamed_calls(chat, body(name, choice)) == (calls, TOOL_CALLS)


@pytest.mark.parametrize("name", FORMATS)
def test_the_raw_reply_is_in_the_formats_own_markup(formats_channel: grpc.Channel, name: str) -> None:
    """Unparsed (skip_special_tokens false), the reply is the served model's markup, not Hermes's."""
    chat = chat_pb2_grpc.ChatServiceStub(formats_channel)
    request = {**body(name, "named"), "skip_special_tokens": False}
    message = chat.CreateChatCompletion(parse(chat_pb2.CreateChatCompletionRequest, request)).choices[0].message
    markup, text = TOOL_PARSERS[name].markup, message.content.removesuffix("<|im_end|>")  # tiny-chat's end of turn
    assert text.startswith(markup.opening + markup.begin_parts("set_alarm")[0]), text  # up to Kimi K2's call number
    assert text.endswith(markup.call_end + markup.closing) and not message.tool_calls, text


@pytest.mark.parametrize("name", FORMATS)
def test_parallel_tool_calls_false_is_one_call(formats_channel: grpc.Channel, name: str) -> None:
    chat = chat_pb2_grpc.ChatServiceStub(formats_channel)
    calls, finish = unary_calls(chat, {**body(name, "required"), "parallel_tool_calls": False})
    assert finish == TOOL_CALLS and len(calls) == 1


@pytest.mark.parametrize("name", FORMATS)
def test_forced_call_on_responses_is_a_function_call_item(formats_channel: grpc.Channel, name: str) -> None:
    responses = response_pb2_grpc.ResponseServiceStub(formats_channel)
    flat = [{"type": "function", **tool["function"]} for tool in TOOLS]
    request = {"model": f"tiny-{name}", "input": ASK[0]["content"], "tools": flat, "temperature": 0,
               "max_output_tokens": 300, "store": False,
               "named_tool_choice": {"type": "function", "name": "set_alarm"}}  # fmt: skip
    response = responses.CreateResponse(parse(response_pb2.CreateResponseRequest, request)).response
    kinds = [item.WhichOneof("item") for item in response.output]
    assert kinds == ["function_call"], response.output
    call = response.output[0].function_call
    assert call.name == "set_alarm"
    jsonschema.validate(json.loads(call.arguments), SCHEMAS["set_alarm"])
