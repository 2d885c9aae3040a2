"""Chat tool calls and reasoning end to end: tiny-chat's model-card prompts over gRPC, unary and streamed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc, common_pb2
from tests.rpc import parse

TOOLS = [
    {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city name."}},
                       "required": ["city"]},
    }}
    for name, description in (("get_weather", "Get the current weather in a city."),
                              ("get_time", "Get the local time in a city."))
]  # fmt: skip
SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
SINGLE = [SYSTEM, {"role": "user", "content": "What's the weather like in Paris?"}]
MULTIPLE = [SYSTEM, {"role": "user", "content": "What is the weather in Paris and in Rome?"}]
THINKING_CALL = [SYSTEM, {"role": "user", "content": "What is the weather in Paris?"}]
GREETING = [{"role": "user", "content": "Hello!"}]
THINK = {"chat_template_kwargs": {"enable_thinking": True}}
TOOL_CALLS = common_pb2.FINISH_REASON_TOOL_CALLS


def body(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"model": "tiny-chat", "temperature": 0, "max_tokens": 160, "messages": messages, **extra}


def unary(chat: chat_pb2_grpc.ChatServiceStub, messages: list, **extra: Any) -> chat_pb2.ChatCompletionChoice:
    response = chat.CreateChatCompletion(parse(chat_pb2.CreateChatCompletionRequest, body(messages, **extra)))
    return response.choices[0]


def streamed(chat: chat_pb2_grpc.ChatServiceStub, messages: list, **extra: Any) -> dict[str, Any]:
    """The stream folded back into a message, checking the streaming rules on the way."""
    request = parse(chat_pb2.StreamChatCompletionRequest, body(messages, **extra))
    chunks = list(chat.StreamChatCompletion(request))
    content, reasoning, calls, finish = "", "", {}, []
    for chunk in chunks:
        for choice in chunk.choices:
            delta = choice.delta
            content += delta.content
            reasoning += delta.reasoning_content
            for call in delta.tool_calls:
                if call.id:  # first fragment: id, type and name, before any arguments
                    assert call.index not in calls and call.type == "function" and call.function.name
                    calls[call.index] = {"id": call.id, "name": call.function.name, "arguments": ""}
                else:
                    assert call.index in calls and not call.function.name
                calls[call.index]["arguments"] += call.function.arguments
            if choice.finish_reason:
                finish.append(choice.finish_reason)
    assert len(finish) == 1, "exactly one finish_reason, on the last chunk of the choice"
    assert chunks[-1].choices[0].finish_reason == finish[0]
    assert sorted(calls) == list(range(len(calls)))
    return {"content": content, "reasoning": reasoning, "calls": [calls[i] for i in sorted(calls)], "finish": finish[0]}


def arguments(choice: chat_pb2.ChatCompletionChoice) -> list[tuple[str, dict]]:
    return [(call.function.name, json.loads(call.function.arguments)) for call in choice.message.tool_calls]


def test_single_call_unary(chat) -> None:
    choice = unary(chat, SINGLE, tools=TOOLS)
    assert choice.finish_reason == TOOL_CALLS
    assert arguments(choice) == [("get_weather", {"city": "Paris"})]
    call = choice.message.tool_calls[0]
    assert call.id.startswith("call_") and call.type == "function"
    assert not choice.message.HasField("content")  # only tool calls: content is null
    assert not choice.message.HasField("reasoning_content")


@pytest.mark.parametrize("messages", [SINGLE, MULTIPLE], ids=["single", "multiple"])
def test_streamed_calls_equal_unary(chat, messages) -> None:
    choice = unary(chat, messages, tools=TOOLS)
    stream = streamed(chat, messages, tools=TOOLS)
    assert stream["finish"] == TOOL_CALLS and stream["content"] == ""
    assert [(c["name"], json.loads(c["arguments"])) for c in stream["calls"]] == arguments(choice)
    assert len({c["id"] for c in stream["calls"]}) == len(stream["calls"])


def test_two_calls_in_one_turn(chat) -> None:
    choice = unary(chat, MULTIPLE, tools=TOOLS)
    assert arguments(choice) == [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})]
    assert len({call.id for call in choice.message.tool_calls}) == 2
    assert choice.finish_reason == TOOL_CALLS


def test_parallel_tool_calls_false_keeps_the_first_call(chat) -> None:
    choice = unary(chat, MULTIPLE, tools=TOOLS, parallel_tool_calls=False)
    assert arguments(choice) == [("get_weather", {"city": "Paris"})]
    assert len(streamed(chat, MULTIPLE, tools=TOOLS, parallel_tool_calls=False)["calls"]) == 1


def test_thinking_splits_reasoning_from_content(chat) -> None:
    choice = unary(chat, GREETING, **THINK)
    assert choice.message.reasoning_content == "The user greets me. I should greet them back and offer help."
    assert choice.message.content == "Hello! I am doing well. How can I help you?"
    assert choice.finish_reason == common_pb2.FINISH_REASON_STOP
    stream = streamed(chat, GREETING, **THINK)
    assert (stream["reasoning"], stream["content"]) == (choice.message.reasoning_content, choice.message.content)


def test_reasoning_effort_turns_thinking_on(chat) -> None:
    choice = unary(chat, GREETING, reasoning_effort="high")
    assert choice.message.reasoning_content and "<think>" not in choice.message.content


def test_thinking_then_tool_call(chat) -> None:
    choice = unary(chat, THINKING_CALL, tools=TOOLS, **THINK)
    assert choice.message.reasoning_content.startswith("The user asks")
    assert arguments(choice) == [("get_weather", {"city": "Paris"})] and choice.finish_reason == TOOL_CALLS
    assert not choice.message.HasField("content")
    stream = streamed(chat, THINKING_CALL, tools=TOOLS, **THINK)
    assert stream["reasoning"] == choice.message.reasoning_content and stream["content"] == ""
    assert json.loads(stream["calls"][0]["arguments"]) == {"city": "Paris"}


def test_cut_off_while_thinking_is_length_with_reasoning(chat) -> None:
    choice = unary(chat, GREETING, max_tokens=8, **THINK)
    assert choice.finish_reason == common_pb2.FINISH_REASON_LENGTH
    assert choice.message.reasoning_content.startswith("The user") and choice.message.content == ""
    stream = streamed(chat, GREETING, max_tokens=8, **THINK)
    assert stream["finish"] == common_pb2.FINISH_REASON_LENGTH
    assert stream["reasoning"] == choice.message.reasoning_content and stream["content"] == ""


def test_raw_text_when_special_tokens_are_kept(chat) -> None:
    choice = unary(chat, SINGLE, tools=TOOLS, skip_special_tokens=False)
    assert "<tool_call>" in choice.message.content and not choice.message.tool_calls
    assert choice.finish_reason == common_pb2.FINISH_REASON_STOP


def test_no_parsing_without_tools_no_markup_in_plain_replies(chat) -> None:
    choice = unary(chat, GREETING)
    assert choice.message.content == "Hello! How can I help you today?" and not choice.message.tool_calls


def test_tool_result_fed_back_gives_the_answer(chat) -> None:
    first = unary(chat, SINGLE, tools=TOOLS)
    assert first.finish_reason == TOOL_CALLS
    call = first.message.tool_calls[0]  # fed back as the client got it
    history = [
        *SINGLE,
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": call.id, "type": "function",
             "function": {"name": call.function.name, "arguments": call.function.arguments}}]},
        {"role": "tool", "tool_call_id": call.id,
         "content": '{"city": "Paris", "temperature": 18, "condition": "sunny"}'},
    ]  # fmt: skip
    answer = unary(chat, history, tools=TOOLS)
    assert answer.finish_reason == common_pb2.FINISH_REASON_STOP and not answer.message.tool_calls
    assert "Paris" in answer.message.content and "<tool_call>" not in answer.message.content
    stream = streamed(chat, history, tools=TOOLS)
    assert stream["content"] == answer.message.content and not stream["calls"]


def test_reasoning_tokens_in_usage_unary_and_streamed(chat) -> None:
    request = body(GREETING, **THINK, stream_options={"include_usage": True})
    reply = chat.CreateChatCompletion(parse(chat_pb2.CreateChatCompletionRequest, {**request, "stream_options": None}))
    chunks = list(chat.StreamChatCompletion(parse(chat_pb2.StreamChatCompletionRequest, request)))
    reasoning = reply.usage.completion_tokens_details.reasoning_tokens
    assert 0 < reasoning < reply.usage.completion_tokens
    assert chunks[-1].usage.completion_tokens_details.reasoning_tokens == reasoning
    plain = chat.CreateChatCompletion(parse(chat_pb2.CreateChatCompletionRequest, body(GREETING)))
    assert not plain.usage.HasField("completion_tokens_details")  # no reasoning: OpenAI's plain usage shape
