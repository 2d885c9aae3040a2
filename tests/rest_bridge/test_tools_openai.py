"""Tool calls and reasoning through the REST bridge, as the official openai client sees them."""

from __future__ import annotations

import json

import openai

TOOLS = [
    {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city name."}},
                       "required": ["city"]}}}
    for name, description in (("get_weather", "Get the current weather in a city."),
                              ("get_time", "Get the local time in a city."))
]  # fmt: skip
SYSTEM = {"role": "system", "content": "You are a helpful assistant."}


def test_tool_call_unary_and_streamed(client: openai.OpenAI) -> None:
    messages = [SYSTEM, {"role": "user", "content": "What's the weather like in Paris?"}]
    reply = client.chat.completions.create(model="tiny-chat", messages=messages, tools=TOOLS, temperature=0)
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    (call,) = choice.message.tool_calls
    assert call.type == "function" and call.id.startswith("call_")
    assert (call.function.name, json.loads(call.function.arguments)) == ("get_weather", {"city": "Paris"})

    calls: dict[int, dict[str, str]] = {}
    finish = None
    with client.chat.completions.create(model="tiny-chat", messages=messages, tools=TOOLS, temperature=0,
                                        stream=True) as stream:  # fmt: skip
        for chunk in stream:
            for delta_choice in chunk.choices:
                for fragment in delta_choice.delta.tool_calls or []:
                    entry = calls.setdefault(fragment.index, {"name": "", "arguments": ""})
                    entry["name"] += fragment.function.name or ""
                    entry["arguments"] += fragment.function.arguments or ""
                finish = delta_choice.finish_reason or finish
    assert finish == "tool_calls"
    assert [(c["name"], json.loads(c["arguments"])) for c in calls.values()] == [("get_weather", {"city": "Paris"})]


def test_thinking_comes_back_as_reasoning_content(client: openai.OpenAI) -> None:
    reply = client.chat.completions.create(
        model="tiny-chat", messages=[{"role": "user", "content": "Hello!"}], temperature=0,
        extra_body={"chat_template_kwargs": {"enable_thinking": True}},
    )  # fmt: skip
    message = reply.choices[0].message
    reasoning = message.model_extra.get("reasoning_content") if message.model_extra else None
    assert reasoning and "<think>" not in reasoning and "</think>" not in (message.content or "")
    assert message.content and "<think>" not in message.content
