"""Unit tests of the Responses API translation: OpenAI JSON -> proto, proto -> OpenAI JSON and events.

Every JSON the bridge writes is checked against the official openai package's own types.
"""

from __future__ import annotations

import pydantic
import pytest
from openai.types.responses import Response, ResponseItemList, ResponseStreamEvent

from ovserve.clients.v1 import common_pb2, response_events_pb2, response_object_pb2, response_pb2
from ovserve.rest_bridge import sse
from ovserve.rest_bridge.errors import BridgeError, openai_param, openai_text
from ovserve.rest_bridge.render import responses as responses_output
from ovserve.rest_bridge.translate import responses as responses_requests

ro = response_object_pb2
ev = response_events_pb2
EVENT = pydantic.TypeAdapter(ResponseStreamEvent)


def create(**fields: object) -> response_pb2.CreateResponseRequest:
    request, stream = responses_requests.create_request({"model": "m", **fields})
    assert not stream
    return request  # type: ignore[return-value]


def refused(body: dict[str, object]) -> BridgeError:
    with pytest.raises(BridgeError) as raised:
        responses_requests.create_request({"model": "m", **body})
    assert raised.value.status_code == 400
    return raised.value


# ---- OpenAI JSON -> proto ----


def test_string_input_and_stream_class() -> None:
    assert create(input="hi").input == "hi"
    request, stream = responses_requests.create_request({"model": "m", "input": "hi", "stream": True})
    assert stream and isinstance(request, response_pb2.StreamResponseRequest) and request.input == "hi"


def test_every_input_item_type() -> None:
    request = create(input=[
        {"role": "system", "content": "be brief"},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "what is this?"},
            {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "low"},
        ]},
        {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed", "content": [
            {"type": "output_text", "text": "a cat", "annotations": [], "logprobs": []},
        ]},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "think"}],
         "content": [{"type": "reasoning_text", "text": "hmm"}]},
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "42"},
        {"type": "function_call_output", "call_id": "call_2", "output": [{"type": "input_text", "text": "7"}]},
        {"type": "item_reference", "id": "msg_0"},
    ])  # fmt: skip
    system, user, assistant, reasoning, call, output, parts_output, reference = request.input_items
    assert request.input == ""
    assert (system.type, system.role, system.content) == ("message", "system", "be brief")
    assert not user.HasField("content") and [p.type for p in user.content_parts] == ["input_text", "input_image"]
    assert user.content_parts[1].image_url.startswith("data:") and user.content_parts[1].detail == "low"
    assert assistant.content_parts[0].text == "a cat" and assistant.id == "msg_1"
    assert reasoning.summary[0].text == "think" and reasoning.content_parts[0].type == "reasoning_text"
    assert (call.call_id, call.name, call.arguments) == ("call_1", "f", "{}")
    assert output.output == "42" and not output.output_parts
    assert parts_output.output == "" and parts_output.output_parts[0].text == "7"
    assert (reference.type, reference.id) == ("item_reference", "msg_0")


def test_options_tools_and_tool_choice_forms() -> None:
    request = create(
        input="hi", instructions="sys", previous_response_id="resp_1", store=False, background=False,
        max_output_tokens=5, temperature=0, top_p=0.5, truncation="auto", parallel_tool_calls=False,
        text={"format": {"type": "json_schema", "name": "x", "schema": {"type": "object"}, "strict": True}},
        reasoning={"effort": "low", "summary": "auto"}, metadata={"k": "v"}, include=["message.output_text.logprobs"],
        tools=[{"type": "function", "name": "f", "description": "d", "parameters": {"type": "object"}, "strict": True}],
        tool_choice={"type": "function", "name": "f"}, stop=["a", "b"], top_k=3, ignore_eos=True, user="u",
    )  # fmt: skip
    assert request.instructions == "sys" and request.previous_response_id == "resp_1" and not request.store
    assert request.max_output_tokens == 5 and request.HasField("temperature") and request.temperature == 0
    assert request.text.format.schema["type"] == "object" and request.text.format.strict
    assert request.reasoning.effort == "low" and dict(request.metadata) == {"k": "v"}
    assert request.tools[0].name == "f" and request.tools[0].parameters["type"] == "object"
    assert request.named_tool_choice.name == "f" and not request.HasField("tool_choice")
    assert list(request.stop_sequences) == ["a", "b"] and request.top_k == 3 and request.user == "u"
    assert create(input="hi", tool_choice="required").tool_choice == "required"
    assert create(input="hi", stop="x").stop == "x"


def test_nulls_mean_unset() -> None:
    request = create(input=[{"role": "user", "content": "hi", "id": None}], temperature=None, instructions=None)
    assert not request.HasField("temperature") and not request.HasField("instructions")
    assert request.input_items[0].id == ""


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"input": [{"type": "bogus"}]}, "input[0].type"),
        ({"input": [{"content": "no role"}]}, "input[0].type"),
        ({"input": ["a string"]}, "input[0]"),
        ({"input": 5}, "input"),
        ({"input": [{"role": "user", "content": 3}]}, "input[0].content"),
        ({"input": [{"role": "user", "content": [{"type": "text", "text": "chat"}]}]}, "input[0].content[0].type"),
        ({"input": [{"role": "user", "content": [{"text": "no type"}]}]}, "input[0].content[0].type"),
        ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": {"url": "x"}}]}]},
         "input[0].content[0].image_url"),
        ({"input": [{"role": "user", "content": [{"type": "input_text", "text": "x", "extra": 1}]}]},
         "input[0].content[0].extra"),
        ({"input": [{"role": "user", "content_parts": []}]}, "input[0].content_parts"),
        ({"input": [{"type": "function_call_output", "call_id": "c", "output": [{"type": "output_text"}]}]},
         "input[0].output[0].type"),
        ({"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": {"a": 1}}]},
         "input[0].arguments"),
        ({"input": [{"type": "reasoning", "summary": "text"}]}, "input[0].summary"),
        ({"input": "hi", "stream_options": {"include_usage": True}}, "stream_options"),
        ({"input": "hi", "messages": []}, "messages"),
        ({"input": "hi", "max_tokens": 3}, "max_tokens"),
        ({"input": "hi", "input_items": []}, "input_items"),
        ({"input": "hi", "bogus": 1}, "bogus"),
        ({"input": "hi", "stream": "yes"}, "stream"),
        ({"input": "hi", "temperature": "hot"}, "temperature"),
        ({"input": "hi", "reasoning": {"effort": 3}}, "reasoning.effort"),
        ({"input": "hi", "text": {"format": {"type": "text"}, "verbosity": 3}}, "text.verbosity"),
        ({"input": "hi", "metadata": {"k": 1}}, "metadata.k"),
        ({"input": "hi", "tools": [{"type": "function", "name": "f", "bogus": True}]}, "tools[0].bogus"),
        ({"input": "hi", "tool_choice": {"type": "function", "nmae": "f"}}, "tool_choice"),
        ({"input": "hi", "max_output_tokens": 2**40}, "max_output_tokens"),
    ],
)  # fmt: skip
def test_bad_input_names_the_param(body: dict[str, object], param: str) -> None:
    error = refused(body)
    assert error.param == param, error.message
    assert error.envelope()["error"]["type"] == "invalid_request_error"


@pytest.mark.parametrize(
    ("field", "param", "text"),
    [
        ("input_items[2].call_id", "input[2].call_id", "input[2].call_id"),
        ("input_items[0].content_parts[1].image_url", "input[0].content[1].image_url", "input[0].content[1].image_url"),
        ("input_items[3].output_parts[0].type", "input[3].output[0].type", "input[3].output[0].type"),
        ("named_tool_choice.name", "tool_choice", "tool_choice.name"),
        ("previous_response_id", "previous_response_id", "previous_response_id"),
    ],
)
def test_service_paths_map_back_to_openai_names(field: str, param: str, text: str) -> None:
    assert openai_param(field) == param
    assert openai_text(f"{field}: bad") == f"{text}: bad"


def test_query_strings() -> None:
    get = responses_requests.get_request("resp_1", {"include[]": [b"a", b"b"]})
    assert isinstance(get, response_pb2.GetResponseRequest) and list(get.include) == ["a", "b"]
    resume = responses_requests.get_request("resp_1", {"stream": [b"true"], "starting_after": [b"7"]})
    assert isinstance(resume, response_pb2.ResumeResponseStreamRequest) and resume.starting_after == 7
    assert not responses_requests.get_request("r", {"stream": [b"true"]}).HasField("starting_after")  # type: ignore[union-attr]
    items = responses_requests.input_items_request(
        "resp_1", {"after": [b"msg_1"], "limit": [b"100"], "order": [b"asc"]}
    )
    assert (items.after, items.limit, items.order) == ("msg_1", 100, "asc")
    assert not responses_requests.input_items_request("resp_1", {}).HasField("limit")


@pytest.mark.parametrize(
    ("call", "query", "param"),
    [
        ("input_items", {"limit": [b"0"]}, "limit"),
        ("input_items", {"limit": [b"101"]}, "limit"),
        ("input_items", {"limit": [b"ten"]}, "limit"),
        ("input_items", {"order": [b"up"]}, "order"),
        ("input_items", {"limit": [b"1"], "bogus": [b"1"]}, "bogus"),
        ("input_items", {"after": [b"a", b"b"]}, "after"),
        ("get", {"stream": [b"maybe"]}, "stream"),
        ("get", {"starting_after": [b"3"]}, "starting_after"),
        ("get", {"stream": [b"true"], "starting_after": [b"-1"]}, "starting_after"),
    ],
)
def test_bad_query_names_the_param(call: str, query: dict[str, list[bytes]], param: str) -> None:
    build = responses_requests.input_items_request if call == "input_items" else responses_requests.get_request
    with pytest.raises(BridgeError) as raised:
        build("resp_1", query)
    assert raised.value.status_code == 400 and raised.value.param == param


# ---- proto -> OpenAI JSON ----


def message_item(text: str = "Hello", status: int = ro.ITEM_STATUS_COMPLETED) -> ro.OutputItem:
    item = ro.OutputItem()
    item.message.id, item.message.role, item.message.status = "msg_1", common_pb2.ROLE_ASSISTANT, status
    item.message.content.add().output_text.text = text
    return item


def full_response() -> ro.Response:
    value = ro.Response(
        id="resp_1", object="response", created_at=100, completed_at=101, status=ro.RESPONSE_STATUS_COMPLETED,
        model="tiny-chat", instructions="sys", store=True, background=False, temperature=1.0, top_p=1.0,
        truncation="disabled", tool_choice="auto", parallel_tool_calls=True, max_output_tokens=50, top_k=4,
        metadata={"k": "v"}, stop_sequences=["END"],
    )  # fmt: skip
    reasoning = value.output.add().reasoning
    reasoning.id, reasoning.status = "rs_1", ro.ITEM_STATUS_COMPLETED
    reasoning.summary.add(text="thinking")
    value.output.append(message_item())
    call = value.output.add().function_call
    call.id, call.call_id, call.name, call.arguments, call.status = "fc_1", "call_1", "f", '{"a":1}', 2
    tool = value.tools.add(type="function", name="f", description="d")
    tool.parameters.update({"type": "object", "properties": {"a": {"type": "integer", "minimum": 1}}})
    value.text.format.type = "text"
    value.reasoning.effort = "low"
    value.usage.input_tokens, value.usage.output_tokens, value.usage.total_tokens = 10, 5, 15
    value.usage.input_tokens_details.cached_tokens = 3
    value.usage.output_tokens_details.reasoning_tokens = 2
    return value


def test_response_object_shape() -> None:
    out = responses_output.response(full_response())
    parsed = Response.model_validate(out)
    assert parsed.output_text == "Hello" and parsed.status == "completed"
    assert out["object"] == "response" and out["created_at"] == 100 and out["completed_at"] == 101
    assert [item["type"] for item in out["output"]] == ["reasoning", "message", "function_call"]
    assert out["output"][0] == {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text",
                                "text": "thinking"}], "status": "completed"}  # fmt: skip
    assert out["output"][1] == {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
                                "content": [{"type": "output_text", "text": "Hello", "annotations": [],
                                             "logprobs": []}]}  # fmt: skip
    assert out["output"][2] == {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "f",
                                "arguments": '{"a":1}', "status": "completed"}  # fmt: skip
    assert out["usage"] == {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 3, "cache_write_tokens": 0},
                            "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 2},
                            "total_tokens": 15}  # fmt: skip
    assert out["tools"] == [
        {
            "type": "function",
            "name": "f",
            "description": "d",
            "strict": None,
            "parameters": {"type": "object", "properties": {"a": {"type": "integer", "minimum": 1}}},
        }
    ]  # integers stay integers
    assert out["reasoning"] == {"effort": "low", "summary": None} and out["text"] == {"format": {"type": "text"}}
    assert out["error"] is None and out["incomplete_details"] is None and out["previous_response_id"] is None
    assert "user" not in out and out["metadata"] == {"k": "v"} and out["stop"] == ["END"] and out["top_k"] == 4
    assert "seed" not in out  # extensions only when set


def test_minimal_response_prints_openai_defaults_and_nulls() -> None:
    out = responses_output.response(ro.Response(id="resp_2", created_at=1, model="m", status=1))
    Response.model_validate(out)
    assert out["status"] == "queued" and out["output"] == [] and out["usage"] is None
    assert out["completed_at"] is None and out["instructions"] is None and out["temperature"] is None
    assert out["tool_choice"] == "auto" and out["tools"] == [] and out["reasoning"] == {"effort": None,
                                                                                         "summary": None}  # fmt: skip
    assert out["text"] == {"format": {"type": "text"}} and out["parallel_tool_calls"] is True


def test_failed_incomplete_named_choice_json_schema_and_nested_tool() -> None:
    value = ro.Response(id="r", model="m", status=ro.RESPONSE_STATUS_FAILED)
    value.error.code, value.error.message = "server_error", "boom"
    value.named_tool_choice.function.name = "g"
    value.text.format.type, value.text.format.name = "json_schema", "x"
    value.text.format.schema.update({"type": "object"})
    tool = value.tools.add(type="function")
    tool.function.name = "g"
    tool.function.parameters.update({"type": "object"})
    out = responses_output.response(value)
    Response.model_validate(out)
    assert out["status"] == "failed" and out["error"] == {"code": "server_error", "message": "boom"}
    assert out["tool_choice"] == {"type": "function", "name": "g"}
    assert out["text"]["format"] == {"type": "json_schema", "name": "x", "schema": {"type": "object"}, "strict": None}
    assert out["tools"][0]["name"] == "g" and out["tools"][0]["parameters"] == {"type": "object"}
    incomplete = ro.Response(id="r", model="m", status=ro.RESPONSE_STATUS_INCOMPLETE)
    incomplete.incomplete_details.reason = ro.INCOMPLETE_REASON_MAX_OUTPUT_TOKENS
    out = responses_output.response(incomplete)
    assert out["status"] == "incomplete" and out["incomplete_details"] == {"reason": "max_output_tokens"}
    assert Response.model_validate(out).incomplete_details.reason == "max_output_tokens"  # type: ignore[union-attr]


def test_enum_tables_cover_every_value() -> None:
    assert set(responses_output.RESPONSE_STATUSES) == set(ro.ResponseStatus.values())
    assert set(responses_output.ITEM_STATUSES) == set(ro.ItemStatus.values())
    assert set(responses_output.INCOMPLETE_REASONS) == set(ro.IncompleteReason.values())


def test_input_item_list_parses_as_openai_list() -> None:
    reply = response_pb2.ListResponseInputItemsResponse(object="list", first_id="m1", last_id="o1", has_more=True)
    reply.data.add(type="message", id="m1", role="user", content="hi")
    parts = reply.data.add(type="message", id="m2", role="user")
    parts.content_parts.add(type="input_text", text="look")
    parts.content_parts.add(type="input_image", image_url="data:image/png;base64,AA")
    reply.data.add(type="message", id="m3", role="assistant", content="hello")
    reply.data.add(type="function_call", id="f1", call_id="c1", name="f", arguments="{}")
    reply.data.add(type="function_call_output", id="o1", call_id="c1", output="42")
    out = responses_output.input_item_list(reply)
    parsed = ResponseItemList.model_validate(out)
    assert [item.type for item in parsed.data] == ["message"] * 3 + ["function_call", "function_call_output"]
    assert out["data"][0]["content"] == [{"type": "input_text", "text": "hi"}]
    assert out["data"][1]["content"][1]["detail"] == "auto"
    assert out["data"][2]["content"][0]["type"] == "output_text"
    assert out["has_more"] and out["first_id"] == "m1" and out["last_id"] == "o1"
    empty = responses_output.input_item_list(response_pb2.ListResponseInputItemsResponse())
    assert empty == {"object": "list", "data": [], "first_id": None, "last_id": None, "has_more": False}


# ---- events ----


def every_event() -> list[ev.ResponseStreamEvent]:
    """One of each event oneof, in a plausible order."""
    events: list[ev.ResponseStreamEvent] = []

    def add(**kwargs: object) -> ev.ResponseStreamEvent:
        event = ev.ResponseStreamEvent(sequence_number=len(events), **kwargs)  # type: ignore[arg-type]
        events.append(event)
        return event

    snapshot = ro.Response(id="resp_1", created_at=1, model="m", status=ro.RESPONSE_STATUS_IN_PROGRESS)
    add(created=ev.ResponseCreatedEvent(response=snapshot))
    add(queued=ev.ResponseQueuedEvent(response=snapshot))
    add(in_progress=ev.ResponseInProgressEvent(response=snapshot))
    reasoning = ro.OutputItem()
    reasoning.reasoning.id, reasoning.reasoning.status = "rs_1", ro.ITEM_STATUS_IN_PROGRESS
    add(output_item_added=ev.ResponseOutputItemAddedEvent(output_index=0, item=reasoning))
    part = ro.SummaryText(text="")
    add(reasoning_summary_part_added=ev.ResponseReasoningSummaryPartAddedEvent(item_id="rs_1", part=part))
    add(reasoning_summary_text_delta=ev.ResponseReasoningSummaryTextDeltaEvent(item_id="rs_1", delta="th"))
    add(reasoning_summary_text_done=ev.ResponseReasoningSummaryTextDoneEvent(item_id="rs_1", text="th"))
    done_part = ro.SummaryText(text="th")
    add(reasoning_summary_part_done=ev.ResponseReasoningSummaryPartDoneEvent(item_id="rs_1", part=done_part))
    add(reasoning_text_delta=ev.ResponseReasoningTextDeltaEvent(item_id="rs_1", delta="r"))
    add(reasoning_text_done=ev.ResponseReasoningTextDoneEvent(item_id="rs_1", text="r"))
    add(output_item_done=ev.ResponseOutputItemDoneEvent(output_index=0, item=reasoning))
    add(output_item_added=ev.ResponseOutputItemAddedEvent(output_index=1, item=message_item("", 1)))
    empty = ro.OutputContentPart(output_text=ro.OutputText(text=""))
    add(content_part_added=ev.ResponseContentPartAddedEvent(item_id="msg_1", output_index=1, part=empty))
    delta = ev.ResponseOutputTextDeltaEvent(item_id="msg_1", output_index=1, delta="Hel")
    delta.logprobs.add(token="Hel", logprob=-0.5, bytes=[72, 101, 108]).top_logprobs.add(token="Hel", logprob=-0.5)
    add(output_text_delta=delta)
    add(output_text_delta=ev.ResponseOutputTextDeltaEvent(item_id="msg_1", output_index=1, delta="lo"))
    add(output_text_done=ev.ResponseOutputTextDoneEvent(item_id="msg_1", output_index=1, text="Hello"))
    add(refusal_delta=ev.ResponseRefusalDeltaEvent(item_id="msg_1", output_index=1, delta="no"))
    add(refusal_done=ev.ResponseRefusalDoneEvent(item_id="msg_1", output_index=1, refusal="no"))
    full = ro.OutputContentPart(output_text=ro.OutputText(text="Hello"))
    add(content_part_done=ev.ResponseContentPartDoneEvent(item_id="msg_1", output_index=1, part=full))
    add(output_item_done=ev.ResponseOutputItemDoneEvent(output_index=1, item=message_item()))
    call = ro.OutputItem(function_call=ro.OutputFunctionCall(id="fc_1", call_id="call_1", name="f", status=1))
    add(output_item_added=ev.ResponseOutputItemAddedEvent(output_index=2, item=call))
    add(function_call_arguments_delta=ev.ResponseFunctionCallArgumentsDeltaEvent(item_id="fc_1", output_index=2,
                                                                                 delta="{}"))  # fmt: skip
    add(function_call_arguments_done=ev.ResponseFunctionCallArgumentsDoneEvent(item_id="fc_1", output_index=2,
                                                                               arguments="{}"))  # fmt: skip
    add(completed=ev.ResponseCompletedEvent(response=full_response()))
    add(incomplete=ev.ResponseIncompleteEvent(response=snapshot))
    add(failed=ev.ResponseFailedEvent(response=snapshot))
    add(error=ev.ResponseErrorEvent(code="server_error", message="boom"))
    # MCP tools (after the rest, so the sequence numbers above stay): each item kind as the openai client reads it.
    listed = ro.OutputMcpListTools(id="mcpl_1", server_label="tools")
    listed.tools.add(name="add", description="Add.").input_schema.update({"type": "object"})
    add(output_item_added=ev.ResponseOutputItemAddedEvent(output_index=3, item=ro.OutputItem(mcp_list_tools=listed)))
    for name in ("mcp_list_tools_in_progress", "mcp_list_tools_completed", "mcp_list_tools_failed"):
        add(**{name: ev.ResponseMcpItemEvent(item_id="mcpl_1", output_index=3)})
    made = ro.OutputMcpCall(id="mcp_1", server_label="tools", name="add", arguments="{}", output="5", status=2)
    add(output_item_done=ev.ResponseOutputItemDoneEvent(output_index=4, item=ro.OutputItem(mcp_call=made)))
    add(mcp_call_arguments_delta=ev.ResponseMcpCallArgumentsDeltaEvent(item_id="mcp_1", output_index=4, delta="{}"))
    add(mcp_call_arguments_done=ev.ResponseMcpCallArgumentsDoneEvent(item_id="mcp_1", output_index=4, arguments="{}"))
    for name in ("mcp_call_in_progress", "mcp_call_completed", "mcp_call_failed"):
        add(**{name: ev.ResponseMcpItemEvent(item_id="mcp_1", output_index=4)})
    asked = ro.OutputMcpApprovalRequest(id="mcpr_1", server_label="tools", name="add", arguments="{}")
    add(output_item_done=ev.ResponseOutputItemDoneEvent(output_index=5, item=ro.OutputItem(mcp_approval_request=asked)))
    # A custom tool call: its item and its input's events.
    custom = ro.OutputCustomToolCall(id="ctc_1", call_id="call_2", name="math", input="1 + 2", status=2)
    add(output_item_done=ev.ResponseOutputItemDoneEvent(output_index=6, item=ro.OutputItem(custom_tool_call=custom)))
    add(custom_tool_call_input_delta=ev.ResponseCustomToolCallInputDeltaEvent(item_id="ctc_1", output_index=6,
                                                                              delta="1 + 2"))  # fmt: skip
    add(custom_tool_call_input_done=ev.ResponseCustomToolCallInputDoneEvent(item_id="ctc_1", output_index=6,
                                                                            input="1 + 2"))  # fmt: skip
    return events


def test_every_event_type_parses_as_the_openai_event() -> None:
    events = every_event()
    kinds = {event.WhichOneof("event") for event in events}
    assert kinds == {f.name for f in ev.ResponseStreamEvent.DESCRIPTOR.oneofs_by_name["event"].fields}
    assert kinds == set(responses_output.EVENTS)
    for event in events:
        name, payload = responses_output.stream_event(event)
        assert list(payload)[:2] == ["type", "sequence_number"] and payload["type"] == name
        parsed = EVENT.validate_python(payload)
        assert parsed.type == name and parsed.sequence_number == event.sequence_number
        assert name == ("error" if event.HasField("error") else "response." + name.split(".", 1)[1])


def test_event_fields_in_openai_shape() -> None:
    by_type: dict[str, list[dict[str, object]]] = {}
    for event in every_event():
        name, payload = responses_output.stream_event(event)
        by_type.setdefault(name, []).append(payload)
    delta = by_type["response.output_text.delta"][0]
    assert delta == {"type": "response.output_text.delta", "sequence_number": 13, "item_id": "msg_1",
                     "output_index": 1, "content_index": 0, "delta": "Hel", "logprobs": [
                         {"token": "Hel", "logprob": -0.5, "bytes": [72, 101, 108],
                          "top_logprobs": [{"token": "Hel", "logprob": -0.5, "bytes": []}]}]}  # fmt: skip
    assert by_type["response.output_text.done"][0]["text"] == "Hello"
    assert by_type["response.content_part.added"][0]["part"] == {"type": "output_text", "text": "",
                                                                  "annotations": [], "logprobs": []}  # fmt: skip
    summary = by_type["response.reasoning_summary_part.added"][0]
    assert summary["summary_index"] == 0 and summary["part"] == {"type": "summary_text", "text": ""}
    assert by_type["response.function_call_arguments.done"][0]["arguments"] == "{}"
    added = by_type["response.output_item.added"][2]
    assert added["item"] == {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "f",
                             "arguments": "", "status": "in_progress"}  # fmt: skip
    assert by_type["response.refusal.done"][0]["refusal"] == "no"
    assert by_type["error"][0] == {"type": "error", "sequence_number": 26, "code": "server_error",
                                   "message": "boom", "param": None}  # fmt: skip
    assert by_type["response.completed"][0]["response"]["status"] == "completed"


def test_named_event_framing() -> None:
    name, payload = responses_output.stream_event(every_event()[0])
    framed = sse.named_event(name, payload)
    head, data, rest = framed.split(b"\n", 2)
    assert head == b"event: response.created" and data.startswith(b'data: {"type":"response.created"')
    assert rest == b"\n" and framed.endswith(b"}\n\n")
    bridge_error = responses_output.error_event(9, "deadline", "timeout_error", None)
    assert EVENT.validate_python(bridge_error).type == "error"


def test_empty_event_is_refused() -> None:
    with pytest.raises(ValueError):
        responses_output.stream_event(ev.ResponseStreamEvent(sequence_number=3))
