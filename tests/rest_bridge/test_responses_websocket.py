"""The Responses API's WebSocket mode, as a client of OpenAI's WebSocket mode uses it (tornado's client here)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from tornado.websocket import WebSocketClientConnection, websocket_connect

from ovserve.rest_bridge.render import responses as responses_output
from tests.rest_bridge.conftest import RunningBridge, http_request

MODEL = "tiny-chat"
TERMINAL = {"response.completed", "response.incomplete", "response.failed", "error"}


def create(**fields: Any) -> dict[str, Any]:
    return {"type": "response.create", "model": MODEL, "max_output_tokens": 16, "temperature": 0, **fields}


async def turn(socket: WebSocketClientConnection, message: dict[str, Any] | str) -> list[dict[str, Any]]:
    """Send one message; the events up to its terminal one."""
    await socket.write_message(message if isinstance(message, str) else json.dumps(message))
    events = []
    while True:
        raw = await asyncio.wait_for(socket.read_message(), 60)
        assert raw is not None, "the server closed the connection"
        events.append(json.loads(raw))
        if events[-1]["type"] in TERMINAL:
            return events


def session(bridge: RunningBridge, *messages: Any) -> list[list[dict[str, Any]]]:
    """One connection, the messages in order (a callable gets the turns so far); the events of each."""

    async def run() -> list[list[dict[str, Any]]]:
        socket = await websocket_connect(f"ws://127.0.0.1:{bridge.port}/v3/responses")
        try:
            turns: list[list[dict[str, Any]]] = []
            for message in messages:
                turns.append(await turn(socket, message(turns) if callable(message) else message))
            return turns
        finally:
            socket.close()

    return asyncio.run(run())


def runs(names: list[str]) -> list[str]:
    return [name for i, name in enumerate(names) if i == 0 or names[i - 1] != name]


def final(events: list[dict[str, Any]]) -> dict[str, Any]:
    assert events[-1]["type"] in ("response.completed", "response.incomplete"), events[-1]
    return events[-1]["response"]  # type: ignore[no-any-return]


def test_the_events_are_the_sse_streams(bridge: RunningBridge) -> None:
    [events] = session(bridge, create(input="Hello!"))
    sent = {"model": MODEL, "input": "Hello!", "max_output_tokens": 16, "temperature": 0, "stream": True}
    sse = http_request(bridge.port, "POST", "/v3/responses", sent)
    streamed = [json.loads(line[6:]) for line in sse.body.decode().split("\n") if line.startswith("data: ")]
    # The same events; how many text deltas depends on how tokens arrive, so runs of deltas count as one.
    assert runs([e["type"] for e in events]) == runs([e["type"] for e in streamed])
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    text = final(events)["output"][0]["content"][0]["text"]
    assert text == streamed[-1]["response"]["output"][0]["content"][0]["text"]


def test_store_false_continues_on_its_connection_only(bridge: RunningBridge) -> None:
    first, second = session(
        bridge,
        create(input="Remember the code word: cobalt.", store=False),
        lambda turns: create(input="What is the code word?", store=False, previous_response_id=final(turns[0])["id"]),
    )
    one, two = final(first), final(second)
    assert two["previous_response_id"] == one["id"]
    # The second prompt holds the whole first turn: its input and its output, then the new question.
    assert two["usage"]["input_tokens"] > one["usage"]["input_tokens"] + one["usage"]["output_tokens"]
    assert http_request(bridge.port, "GET", f"/v3/responses/{one['id']}").status == 404  # not stored
    [elsewhere] = session(bridge, create(input="And now?", store=False, previous_response_id=one["id"]))
    assert elsewhere[-1]["type"] == "error" and elsewhere[-1]["status"] == 400
    assert elsewhere[-1]["error"]["code"] == "previous_response_not_found"


def test_stored_responses_continue_anywhere(bridge: RunningBridge) -> None:
    [first] = session(bridge, create(input="Remember: cobalt."))
    [second] = session(bridge, create(input="The word?", previous_response_id=final(first)["id"]))
    assert final(second)["previous_response_id"] == final(first)["id"]


def test_a_failed_continuation_forgets_what_it_continued(bridge: RunningBridge) -> None:
    output = {"type": "function_call_output", "call_id": "call_missing", "output": "42"}
    _, failed, retry = session(
        bridge,
        create(input="Remember: ember.", store=False),
        lambda turns: create(input=[output], store=False, previous_response_id=final(turns[0])["id"]),
        lambda turns: create(input="The word?", store=False, previous_response_id=final(turns[0])["id"]),
    )
    assert failed[-1]["type"] == "error" and "call_missing" in failed[-1]["error"]["message"]
    assert failed[-1]["error"]["param"].endswith(".call_id")
    assert retry[-1]["type"] == "error" and retry[-1]["error"]["code"] == "previous_response_not_found"


def test_bad_messages_are_error_events_and_the_connection_stays(bridge: RunningBridge) -> None:
    not_json, wrong_type, streamed, bad_field, good = session(
        bridge, "{oops", {"type": "response.cancel"}, create(input="x", stream="yes"), create(input="x", top_p=7),
        create(input="Hi"),
    )  # fmt: skip
    for events, param in ((not_json, None), (wrong_type, "type"), (streamed, "stream"), (bad_field, "top_p")):
        [error] = events
        assert error["type"] == "error" and error["status"] == 400 and error["error"]["param"] == param, error
        assert isinstance(error["error"]["code"], str)
    assert final(good)["status"] in ("completed", "incomplete")


def test_stream_is_accepted_and_ignored(bridge: RunningBridge) -> None:
    # OpenAI's Agents SDK sends stream: true on every response.create of its WebSocket transport.
    streamed, unstreamed = session(bridge, create(input="Hi", stream=True), create(input="Hi", stream=False))
    text = [final(events)["output"][0]["content"][0]["text"] for events in (streamed, unstreamed)]
    assert text[0] and text[0] == text[1]
    assert [e["type"] for e in unstreamed][:2] == ["response.created", "response.in_progress"]


def test_a_deeply_nested_frame_is_an_error_event_and_the_connection_stays(bridge: RunningBridge) -> None:
    deep = '{"type": "response.create", "input": ' + "[" * 100_000 + "]" * 100_000 + "}"
    nested, good = session(bridge, deep, create(input="Hi"))
    [error] = nested
    assert error["type"] == "error" and error["status"] == 400 and "deeper" in error["error"]["message"], error
    assert final(good)["status"] in ("completed", "incomplete")


def test_a_failure_of_the_bridge_is_an_error_event_and_the_connection_stays(
    bridge: RunningBridge, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(event: Any) -> Any:
        raise RuntimeError("a bug")

    async def run() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        socket = await websocket_connect(f"ws://127.0.0.1:{bridge.port}/v3/responses")
        try:
            with monkeypatch.context() as patched:
                patched.setattr(responses_output, "stream_event", broken)
                failed = await turn(socket, create(input="Hi"))
            return failed, await turn(socket, create(input="Hi"))
        finally:
            socket.close()

    failed, good = asyncio.run(run())
    assert failed[-1]["type"] == "error" and failed[-1]["status"] == 500, failed[-1]
    assert failed[-1]["error"]["code"] == "server_error"
    assert final(good)["status"] in ("completed", "incomplete")


def test_plain_get_is_still_405(bridge: RunningBridge) -> None:
    assert http_request(bridge.port, "GET", "/v3/responses").status == 405
