"""Agent loops with tool calls, end to end: the official openai client against ovserve with tiny-chat."""

from __future__ import annotations

import json

import jsonschema
import openai

from tests.rest_bridge.test_tools_openai import SYSTEM, TOOLS

RESPONSES_TOOLS = [{"type": "function", **tool["function"]} for tool in TOOLS]


def weather(city: str) -> str:
    """The tool the agent calls."""
    return json.dumps({"city": city, "temperature": 18, "condition": "sunny"})


def test_chat_agent_loop_streamed(client: openai.OpenAI) -> None:
    messages = [SYSTEM, {"role": "user", "content": "What's the weather like in Paris?"}]
    calls: dict[int, dict[str, str]] = {}
    with client.chat.completions.create(model="tiny-chat", messages=messages, tools=TOOLS, temperature=0,
                                        stream=True) as stream:  # fmt: skip
        for chunk in stream:
            for choice in chunk.choices:
                for fragment in choice.delta.tool_calls or []:
                    entry = calls.setdefault(fragment.index, {"id": "", "name": "", "arguments": ""})
                    entry["id"] += fragment.id or ""
                    entry["name"] += fragment.function.name or ""
                    entry["arguments"] += fragment.function.arguments or ""
    (call,) = calls.values()
    arguments = json.loads(call["arguments"])
    assert call["name"] == "get_weather" and arguments == {"city": "Paris"}
    function = {"name": call["name"], "arguments": call["arguments"]}
    tool_call = {"id": call["id"], "type": "function", "function": function}
    messages += [
        {"role": "assistant", "content": None, "tool_calls": [tool_call]},
        {"role": "tool", "tool_call_id": call["id"], "content": weather(**arguments)},
    ]
    final = client.chat.completions.create(model="tiny-chat", messages=messages, tools=TOOLS, temperature=0)
    answer = final.choices[0]
    assert answer.finish_reason == "stop" and not answer.message.tool_calls
    assert "Paris" in answer.message.content and "<tool_call>" not in answer.message.content


def test_responses_agent_loop_with_previous_response_id(client: openai.OpenAI) -> None:
    first = client.responses.create(model="tiny-chat", instructions=SYSTEM["content"], tools=RESPONSES_TOOLS,
                                    input="What's the weather like in Paris?", temperature=0)  # fmt: skip
    (call,) = [item for item in first.output if item.type == "function_call"]
    arguments = json.loads(call.arguments)
    assert call.name == "get_weather" and arguments == {"city": "Paris"}
    second = client.responses.create(
        model="tiny-chat", instructions=SYSTEM["content"], tools=RESPONSES_TOOLS, previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": weather(**arguments)}],
        temperature=0,
    )  # fmt: skip
    assert second.status == "completed" and "Paris" in second.output_text
    assert not [item for item in second.output if item.type == "function_call"]


def test_json_schema_output_validates(client: openai.OpenAI) -> None:
    schema = {"type": "object", "additionalProperties": False, "required": ["city", "temperature"],
              "properties": {"city": {"type": "string", "enum": ["Paris", "Rome"]},
                             "temperature": {"type": "integer", "minimum": -40, "maximum": 50}}}  # fmt: skip
    reply = client.chat.completions.create(
        model="tiny-chat", messages=[{"role": "user", "content": "What's the weather like in Paris?"}],
        response_format={"type": "json_schema", "json_schema": {"name": "weather", "schema": schema, "strict": True}},
        temperature=0, max_tokens=100,
    )  # fmt: skip
    jsonschema.validate(json.loads(reply.choices[0].message.content), schema)
