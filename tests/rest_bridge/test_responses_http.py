"""The Responses API routes over raw HTTP: SSE framing, 4xx errors naming the param, vanishing clients."""

from __future__ import annotations

import json
from typing import Any

import pydantic
import pytest
from openai.types.responses import ResponseStreamEvent

from tests.rest_bridge.conftest import RunningBridge, http_request
from tests.rest_bridge.test_disconnect import engine_stats, open_stream, wait_idle

EVENT = pydantic.TypeAdapter(ResponseStreamEvent)
HI = {"model": "tiny-chat", "input": "Hello!", "max_output_tokens": 8, "temperature": 0}
PNG = (  # a 1x1 image
    "data:image/png;base64,"
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAWB0VLgAAAABJRU5ErkJggg=="
)


def events(body: bytes) -> list[tuple[str, dict[str, Any]]]:
    """(event name, JSON) per SSE event, checking the framing: one event line, one data line, blank line."""
    text = body.decode()
    assert text.endswith("\n\n") and "[DONE]" not in text
    out = []
    for block in text.split("\n\n")[:-1]:
        event_line, data_line = block.split("\n")
        assert event_line.startswith("event: ") and data_line.startswith("data: "), block
        out.append((event_line.removeprefix("event: "), json.loads(data_line.removeprefix("data: "))))
    return out


def test_sse_framing_event_name_is_the_type(bridge: RunningBridge) -> None:
    reply = http_request(bridge.port, "POST", "/v3/responses", {**HI, "stream": True}, {"x-request-id": "resp-42"})
    assert reply.status == 200 and reply.headers["Content-Type"].startswith("text/event-stream")
    assert reply.headers["x-request-id"] == "resp-42" and reply.headers["Cache-Control"] == "no-cache"
    parsed = events(reply.body)
    for name, payload in parsed:
        assert payload["type"] == name and EVENT.validate_python(payload).type == name
    assert [payload["sequence_number"] for _, payload in parsed] == list(range(len(parsed)))
    assert parsed[0][0] == "response.created" and parsed[-1][0] in ("response.completed", "response.incomplete")


def test_unary_json_is_openai_shaped(bridge: RunningBridge) -> None:
    reply = http_request(bridge.port, "POST", "/v1/responses", HI)
    assert reply.status == 200 and reply.headers["Content-Type"] == "application/json"
    body = reply.json()
    assert type(body["created_at"]) is int and type(body["completed_at"]) in (int, type(None))
    for key in ("instructions", "previous_response_id", "error", "max_tool_calls", "safety_identifier"):
        assert key in body and body[key] is None, key
    assert "user" not in body  # a string in OpenAI's schema, never null: left out when not sent
    # Values in force when not sent (the Open Responses schema requires them as numbers).
    assert (body["top_logprobs"], body["presence_penalty"], body["frequency_penalty"]) == (0, 0.0, 0.0)
    assert body["service_tier"] == "default"
    assert body["reasoning"] == {"effort": None, "summary": None} and body["text"] == {"format": {"type": "text"}}
    deleted = http_request(bridge.port, "DELETE", f"/v3/responses/{body['id']}")
    # The contract's object is "response.deleted" (OpenAI's reference examples print "response").
    assert deleted.status == 200 and deleted.json() == {"id": body["id"], "object": "response.deleted", "deleted": True}


def test_background_stream_resume_over_http(bridge: RunningBridge) -> None:
    body = {**HI, "background": True, "max_output_tokens": 20}
    created = http_request(bridge.port, "POST", "/v3/responses", body).json()
    path = f"/v3/responses/{created['id']}?stream=true&starting_after=2"
    reply = http_request(bridge.port, "GET", path)
    assert reply.status == 200
    parsed = events(reply.body)
    assert parsed[0][1]["sequence_number"] == 3 and parsed[-1][0] in ("response.completed", "response.incomplete")


def refusal(bridge: RunningBridge, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    reply = http_request(bridge.port, method, path, body)
    error = reply.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"]
    assert error["code"] is None or isinstance(error["code"], str)
    return reply.status, error


def bad(**fields: Any) -> dict[str, Any]:
    return {**HI, **fields}


def user(*content: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"role": "user", "content": list(content)}]


BAD_BODIES = [
    (bad(input=[{"type": "web_search_call", "id": "ws_1"}]), 400, "input[0].type"),
    (bad(input=user({"type": "input_text", "text": "see"}, {"type": "input_image", "image_url": PNG})), 400,
     "input[0].content[1].image_url"),
    (bad(input=user({"type": "input_image", "image_url": {"url": PNG}})), 400, "input[0].content[0].image_url"),
    (bad(input=user({"type": "input_file", "file_id": "f"})), 400, "input[0].content[0].file_id"),
    (bad(stream=True, stream_options={"include_usage": True}), 400, "stream_options"),  # chat's, not ours
    (bad(reasoning={"effort": "extreme"}), 400, "reasoning.effort"),
    (bad(previous_response_id="resp_does_not_exist"), 400, "previous_response_id"),  # OpenAI's status
    (bad(service_tier="fastest"), 400, "service_tier"),
    (bad(prompt_cache_retention="forever"), 400, "prompt_cache_retention"),
    (bad(text={"verbosity": "chatty"}), 400, "text.verbosity"),
    (bad(max_tool_calls=0), 400, "max_tool_calls"),
    (bad(input=[{"role": "assistant", "phase": "draft", "content": "x"}]), 400, "input[0].phase"),
    (bad(input=[{"role": "user", "phase": "commentary", "content": "x"}]), 400, "input[0].phase"),
    (bad(prompt={"id": "pmpt_1"}), 400, "prompt"),
    (bad(input=[{"type": "function_call_output", "output": "42"}]), 400, "input[0].call_id"),
    (bad(input=[{"type": "function_call_output", "call_id": "call_nowhere", "output": "42"}]), 400,
     "input[0].call_id"),  # no call of that id before it
    (bad(input=[{"type": "function_call", "name": "f", "arguments": "{}"}]), 400, "input[0].call_id"),
    (bad(input=[{"role": "robot", "content": "beep"}]), 400, "input[0].role"),
    (bad(input=7), 400, "input"),
    (bad(model="no-such-model"), 404, "model"),
    (bad(messages=[{"role": "user", "content": "hi"}]), 400, "messages"),
    (bad(max_tokens=5), 400, "max_tokens"),
    (bad(temperature=9), 400, "temperature"),
    (bad(max_output_tokens=0), 400, "max_output_tokens"),
    (bad(truncation="sometimes"), 400, "truncation"),
    (bad(text={"format": {"type": "yaml"}}), 400, "text.format.type"),
    (bad(tools=[{"type": "web_search"}]), 400, "tools[0].type"),
    (bad(tool_choice="sometimes"), 400, "tool_choice"),
    (bad(include=["file_search_call.results"]), 400, "include[0]"),
    (bad(background=True, store=False), 400, "background"),
    (bad(metadata={"k": 1}), 400, "metadata.k"),
    (bad(conversation="conv_1"), 404, "conversation"),
    (bad(conversation={"id": "conv_1"}), 404, "conversation"),
    (bad(conversation={"id": "conv_1", "name": "x"}), 400, "conversation.name"),
    (bad(conversation=7), 400, "conversation"),
    (bad(conversation="conv_1", previous_response_id="resp_1"), 400, "conversation"),
    (bad(bogus_field=1), 400, "bogus_field"),
]  # fmt: skip


@pytest.mark.parametrize(("body", "status", "param"), BAD_BODIES, ids=[p for _, _, p in BAD_BODIES])
def test_bad_bodies_are_4xx_naming_the_param(
    bridge: RunningBridge, body: dict[str, Any], status: int, param: str
) -> None:
    got, error = refusal(bridge, "POST", "/v3/responses", body)
    assert (got, error["param"]) == (status, param), error["message"]
    if body.get("stream"):  # refused before the stream began: a JSON error, not an event
        assert got == 400


def test_an_unknown_previous_response_has_openais_code(bridge: RunningBridge) -> None:
    reply = http_request(bridge.port, "POST", "/v3/responses", bad(previous_response_id="resp_missing"))
    assert reply.status == 400 and reply.json()["error"]["code"] == "previous_response_not_found"


def test_item_reference_to_an_unknown_item_is_refused(bridge: RunningBridge) -> None:
    got, error = refusal(bridge, "POST", "/v3/responses", bad(input=[{"type": "item_reference", "id": "msg_x"}]))
    assert (got, error["param"]) == (404, "input[0].id"), error
    got, error = refusal(bridge, "POST", "/v3/responses", bad(input=[{"type": "item_reference"}]))
    assert (got, error["param"]) == (400, "input[0].id"), error


def test_bad_routes_and_queries(bridge: RunningBridge) -> None:
    created = http_request(bridge.port, "POST", "/v3/responses", HI).json()
    items = f"/v3/responses/{created['id']}/input_items"
    cases = [
        ("GET", f"{items}?limit=0", 400, "limit"),
        ("GET", f"{items}?limit=101", 400, "limit"),
        ("GET", f"{items}?limit=ten", 400, "limit"),
        ("GET", f"{items}?order=sideways", 400, "order"),
        ("GET", f"{items}?colour=red", 400, "colour"),
        ("GET", f"/v3/responses/{created['id']}?stream=maybe", 400, "stream"),
        ("GET", f"/v3/responses/{created['id']}?starting_after=3", 400, "starting_after"),
        ("GET", "/v3/responses/resp_missing", 404, None),
        ("GET", "/v3/responses/resp_missing/input_items", 404, None),
        ("DELETE", "/v3/responses/resp_missing", 404, None),
        ("POST", "/v3/responses/resp_missing/cancel", 404, None),
        ("POST", f"/v3/responses/{created['id']}/cancel", 400, None),  # not a background response
        ("GET", f"/v3/responses/{created['id']}?stream=true", 400, None),  # nor resumable
    ]
    for method, path, status, param in cases:
        got, error = refusal(bridge, method, path, {} if method == "POST" else None)
        assert got == status, (path, error)
        if param is not None:
            assert error["param"] == param, (path, error)


def test_dropped_response_streams_leave_the_engine_idle(bridge: RunningBridge) -> None:
    long = {**HI, "input": "Tell me a story.", "max_output_tokens": 1500, "ignore_eos": True, "stream": True}
    sockets = [open_stream(bridge.port, "/v3/responses", long) for _ in range(5)]
    assert not engine_stats(bridge).idle  # they are generating (1500 tokens each)
    for sock in sockets:
        sock.close()
    stats = wait_idle(bridge)
    assert stats.idle, stats
    assert http_request(bridge.port, "POST", "/v3/responses", HI).status == 200
