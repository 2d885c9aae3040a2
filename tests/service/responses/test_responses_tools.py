"""Responses function calls and reasoning end to end: items, their events as a stack, and the tool loop."""

from __future__ import annotations

import json
from typing import Any

import grpc
import pytest

from ovserve.clients.v1 import response_object_pb2 as objects_pb2
from ovserve.clients.v1 import response_pb2, response_pb2_grpc
from tests.rpc import parse

TOOLS = [
    {"type": "function", "name": name, "description": description,
     "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city name."}},
                    "required": ["city"]}}
    for name, description in (("get_weather", "Get the current weather in a city."),
                              ("get_time", "Get the local time in a city."))
]  # fmt: skip
SYSTEM = "You are a helpful assistant."
THINK = {"reasoning": {"effort": "high"}}
STATUS = objects_pb2.ResponseStatus


@pytest.fixture
def responses(channel: grpc.Channel) -> response_pb2_grpc.ResponseServiceStub:
    """ResponseService stub on the session server."""
    return response_pb2_grpc.ResponseServiceStub(channel)


def body(**extra: Any) -> dict[str, Any]:
    return {"model": "tiny-chat", "temperature": 0, "max_output_tokens": 160, **extra}


def create(stub: response_pb2_grpc.ResponseServiceStub, **extra: Any) -> objects_pb2.Response:
    return stub.CreateResponse(parse(response_pb2.CreateResponseRequest, body(**extra))).response


def stream(stub: response_pb2_grpc.ResponseServiceStub, **extra: Any) -> list:
    return [m.event for m in stub.StreamResponse(parse(response_pb2.StreamResponseRequest, body(**extra)))]


def item_id(item: objects_pb2.OutputItem) -> str:
    return getattr(item, item.WhichOneof("item")).id


def check_events(events: list) -> objects_pb2.Response:
    """Every added has its done, in stack order; deltas join into their done text; return the final Response."""
    kinds = [e.WhichOneof("event") for e in events]
    assert kinds[:2] == ["created", "in_progress"] and kinds[-1] in ("completed", "incomplete")
    assert [e.sequence_number for e in events] == list(range(len(events)))
    final = getattr(events[-1], kinds[-1]).response
    stack: list[tuple[str, ...]] = []
    joined: dict[tuple[str, str], str] = {}
    for event, kind in zip(events, kinds, strict=True):
        data = getattr(event, kind)
        if kind == "output_item_added":
            stack.append(("item", item_id(data.item), str(data.output_index)))
        elif kind == "output_item_done":
            assert stack.pop() == ("item", item_id(data.item), str(data.output_index))
            assert final.output[data.output_index] == data.item  # the done item is what the Response holds
        elif kind in ("content_part_added", "reasoning_summary_part_added"):
            stack.append(("part", data.item_id))
        elif kind in ("content_part_done", "reasoning_summary_part_done"):
            assert stack.pop() == ("part", data.item_id)
        elif kind.endswith("_delta"):
            assert data.item_id in stack[-1]  # inside its open item (or part)
            key = (kind.removesuffix("_delta"), data.item_id)
            joined[key] = joined.get(key, "") + data.delta
        elif kind.endswith("_done") and kind != "output_item_done":
            text = data.arguments if kind == "function_call_arguments_done" else data.text
            assert joined.pop((kind.removesuffix("_done"), data.item_id), "") == text
    assert not stack and not joined
    added = [e.output_item_added.output_index for e, k in zip(events, kinds, strict=True) if k == "output_item_added"]
    assert added == list(range(len(final.output)))  # one output_index per item, in order
    return final


def calls_of(response: objects_pb2.Response) -> list[tuple[str, dict]]:
    return [
        (item.function_call.name, json.loads(item.function_call.arguments))
        for item in response.output
        if item.HasField("function_call")
    ]


def kinds_of(response: objects_pb2.Response) -> list[str]:
    return [item.WhichOneof("item") for item in response.output]


def test_function_call_item(responses) -> None:
    response = create(responses, instructions=SYSTEM, input="What's the weather like in Paris?", tools=TOOLS)
    assert kinds_of(response) == ["function_call"]  # no empty message item next to the call
    call = response.output[0].function_call
    assert call.id.startswith("fc_") and call.call_id.startswith("call_")
    assert call.status == objects_pb2.ITEM_STATUS_COMPLETED
    assert calls_of(response) == [("get_weather", {"city": "Paris"})]
    assert response.status == STATUS.RESPONSE_STATUS_COMPLETED


def test_two_function_calls_streamed_equal_unary(responses) -> None:
    request = {"instructions": SYSTEM, "input": "What is the weather in Paris and in Rome?", "tools": TOOLS}
    unary = create(responses, **request)
    assert calls_of(unary) == [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})]
    final = check_events(stream(responses, **request))
    assert kinds_of(final) == ["function_call", "function_call"] and calls_of(final) == calls_of(unary)
    assert len({item.function_call.call_id for item in final.output}) == 2


def test_reasoning_item_before_the_message(responses) -> None:
    unary = create(responses, input="Hello!", **THINK)
    assert kinds_of(unary) == ["reasoning", "message"]
    reasoning = unary.output[0].reasoning
    assert reasoning.id.startswith("rs_") and reasoning.status == objects_pb2.ITEM_STATUS_COMPLETED
    assert [s.text for s in reasoning.summary] == ["The user greets me. I should greet them back and offer help."]
    assert unary.output[1].message.content[0].output_text.text == "Hello! I am doing well. How can I help you?"
    events = stream(responses, input="Hello!", **THINK)
    final = check_events(events)
    assert final.output[0].reasoning.summary == reasoning.summary
    kinds = [e.WhichOneof("event") for e in events]
    assert kinds.index("reasoning_summary_part_added") < kinds.index("reasoning_summary_text_delta")
    assert kinds.index("reasoning_summary_part_done") < kinds.index("content_part_added")


def test_reasoning_then_function_call(responses) -> None:
    request = {"instructions": SYSTEM, "input": "What is the weather in Paris?", "tools": TOOLS, **THINK}
    final = check_events(stream(responses, **request))
    assert kinds_of(final) == ["reasoning", "function_call"]
    assert final.output[0].reasoning.summary[0].text.startswith("The user asks")
    assert calls_of(final) == calls_of(create(responses, **request)) == [("get_weather", {"city": "Paris"})]


def test_cut_off_while_thinking_is_incomplete_reasoning(responses) -> None:
    final = check_events(stream(responses, input="Hello!", max_output_tokens=8, **THINK))
    assert final.status == STATUS.RESPONSE_STATUS_INCOMPLETE and kinds_of(final) == ["reasoning"]
    assert final.output[0].reasoning.status == objects_pb2.ITEM_STATUS_INCOMPLETE
    assert final.output[0].reasoning.summary[0].text.startswith("The user")


def test_tool_loop_with_previous_response_id_and_function_call_output(responses) -> None:
    first = create(responses, instructions=SYSTEM, input="What's the weather like in Paris?", tools=TOOLS)
    (call,) = [item.function_call for item in first.output]
    result = {"type": "function_call_output", "call_id": call.call_id,
              "output": '{"city": "Paris", "temperature": 18, "condition": "sunny"}'}  # fmt: skip
    chained = create(responses, previous_response_id=first.id, input_items=[result], tools=TOOLS)
    # The same conversation sent whole: the stored turn kept the assistant's call.
    replayed = create(responses, tools=TOOLS, input_items=[
        {"type": "message", "role": "user", "content": "What's the weather like in Paris?"},
        {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments},
        result,
    ])  # fmt: skip
    assert chained.usage.input_tokens == replayed.usage.input_tokens
    assert kinds_of(chained) == ["message"] and not calls_of(chained)
    text = chained.output[0].message.content[0].output_text.text
    assert "Paris" in text and text == replayed.output[0].message.content[0].output_text.text


def test_reasoning_tokens_are_counted_in_usage(channel) -> None:
    from ovserve.clients.v1 import response_pb2, response_pb2_grpc
    from tests.rpc import parse

    stub = response_pb2_grpc.ResponseServiceStub(channel)
    body = {"model": "tiny-chat", "temperature": 0, "max_output_tokens": 200, "input": "Hello!"}
    thinking = stub.CreateResponse(parse(response_pb2.CreateResponseRequest, {**body, "reasoning": {"effort": "high"}}))
    plain = stub.CreateResponse(parse(response_pb2.CreateResponseRequest, body))
    usage = thinking.response.usage
    assert 0 < usage.output_tokens_details.reasoning_tokens < usage.output_tokens
    assert plain.response.usage.output_tokens_details.reasoning_tokens == 0
    assert thinking.response.output[0].WhichOneof("item") == "reasoning"
