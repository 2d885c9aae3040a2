"""Anthropic's Messages API on the bridge over raw HTTP: the event stream's order, replies validated against the
``anthropic`` package's own types (its published schema, offline), Anthropic's headers and error envelope on the
bridge's own refusals, and bad fields refused with a 400 naming them. The stream framing alone, on scripted chunks:
stop sequences split over chunks, a failure after the start."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pydantic
import pytest
from anthropic.types import Message, MessageTokensCount, RawMessageStreamEvent

from ovserve.clients.v1 import chat_pb2, common_pb2
from ovserve.rest_bridge.config import BridgeSettings
from ovserve.rest_bridge.errors import BridgeError
from ovserve.rest_bridge.render.anthropic_stream import MessageEventFraming
from ovserve.rest_bridge.server import Bridge
from ovserve.rest_bridge.translate import anthropic
from tests.conftest import ServerThread
from tests.rest_bridge.conftest import Reply, RunningBridge, http_request

MODEL = "tiny-chat"
ASK = [{"role": "user", "content": "What's the weather like in Paris?"}]
WEATHER = {"name": "get_weather", "description": "Weather.",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}},
                            "required": ["city"]}}  # fmt: skip
BODY = {"model": MODEL, "max_tokens": 24, "messages": ASK, "temperature": 0}
EVENTS = pydantic.TypeAdapter(RawMessageStreamEvent)


def post(bridge: RunningBridge, body: Any, path: str = "/v1/messages", **headers: str) -> Reply:
    return http_request(bridge.port, "POST", path, body, {"anthropic-version": "2023-06-01", **headers})


def events(reply: Reply) -> list[tuple[str, dict[str, Any]]]:
    """(event name, data) of an SSE body, each event's two lines checked."""
    out = []
    for block in reply.body.decode().split("\n\n"):
        if block:
            name, data = block.split("\n")
            out.append((name.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return out


def check_sequence(sent: list[tuple[str, dict[str, Any]]]) -> None:
    """Anthropic's order: message_start, then blocks each started, delta'd and stopped at one index (indexes
    0, 1, ...), then message_delta and message_stop; each event's name is its type and parses as the SDK's."""
    names = [name for name, _ in sent]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"], names
    open_index, next_index = None, 0
    for name, data in sent:
        assert data["type"] == name
        if name != "ping":  # (documented beside the stream's events, not one of the SDK's types)
            EVENTS.validate_python(data)
        if name == "content_block_start":
            assert open_index is None and data["index"] == next_index
            open_index, next_index = data["index"], next_index + 1
        elif name in ("content_block_delta", "content_block_stop"):
            assert data["index"] == open_index
            open_index = None if name == "content_block_stop" else open_index
        elif name in ("message_delta", "message_stop"):
            assert open_index is None


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"tools": [WEATHER], "tool_choice": {"type": "any"}, "max_tokens": 60},
        {"thinking": {"type": "enabled", "budget_tokens": 6}, "tools": [WEATHER], "tool_choice": {"type": "any"},
         "max_tokens": 80},
    ],
)  # fmt: skip
def test_replies_are_anthropics_shapes(bridge: RunningBridge, fields: dict[str, Any]) -> None:
    unary = post(bridge, {**BODY, **fields})
    assert unary.status == 200, unary.body
    message = Message.model_validate(unary.json())  # pydantic validation against the SDK's published types
    stream = post(bridge, {**BODY, **fields, "stream": True})
    assert stream.status == 200 and stream.headers["Content-Type"].startswith("text/event-stream")
    sent = events(stream)
    check_sequence(sent)
    starts = [data["content_block"]["type"] for name, data in sent if name == "content_block_start"]
    assert starts == [block.type for block in message.content]
    final = sent[-2][1]
    assert final["delta"]["stop_reason"] == message.stop_reason
    assert final["usage"]["output_tokens"] == message.usage.output_tokens
    if "tools" in fields:
        assert message.stop_reason == "tool_use" and message.content[-1].type == "tool_use"
        partial: dict[int, str] = {}
        for name, data in sent:
            if name == "content_block_delta" and data["delta"]["type"] == "input_json_delta":
                partial[data["index"]] = partial.get(data["index"], "") + data["delta"]["partial_json"]
        calls = {i: block.input for i, block in enumerate(message.content) if block.type == "tool_use"}
        assert {i: json.loads(text) for i, text in partial.items()} == calls


def test_count_tokens_shape_and_headers(bridge: RunningBridge) -> None:
    reply = post(bridge, {"model": MODEL, "messages": ASK}, "/v3/messages/count_tokens", **{"anthropic-beta": "x"})
    assert reply.status == 200, reply.body
    assert MessageTokensCount.model_validate(reply.json()).input_tokens > 0
    assert reply.headers["request-id"] == reply.headers["x-request-id"]


@pytest.fixture(scope="module")
def small(server: ServerThread) -> Iterator[RunningBridge]:
    """A bridge on the session server taking bodies of at most 4 KiB."""
    running = Bridge(server.target, "127.0.0.1", 0, settings=BridgeSettings(max_body_bytes=4096))
    server.run(running.start())
    yield RunningBridge(running, server)
    server.run(running.stop())


def anthropic_error(reply: Reply, status: int, error_type: str) -> str:
    """The message of an error reply in Anthropic's envelope, of ``status`` and ``error_type``."""
    assert reply.status == status, reply.body
    assert reply.headers["Content-Type"] == "application/json"
    body = reply.json()
    assert body["type"] == "error" and set(body["error"]) == {"type", "message"}, body
    assert body["error"]["type"] == error_type and body["error"]["message"]
    return str(body["error"]["message"])


def test_the_bridges_own_refusals_in_anthropics_envelope(small: RunningBridge) -> None:
    padded = {**BODY, "system": "x" * 5000}
    assert "4096" in anthropic_error(post(small, padded), 413, "request_too_large")
    raw = json.dumps(BODY).encode()
    anthropic_error(post(small, raw, **{"Content-Type": "text/plain"}), 415, "invalid_request_error")
    anthropic_error(post(small, b"{oops", **{"Content-Type": "application/json"}), 400, "invalid_request_error")
    anthropic_error(post(small, b"[1]", **{"Content-Type": "application/json"}), 400, "invalid_request_error")
    deep = b'{"model": ' + b"[" * 100 + b"]" * 100 + b"}"  # past the 32 levels a body may nest
    anthropic_error(post(small, deep, **{"Content-Type": "application/json"}), 400, "invalid_request_error")
    got = http_request(small.port, "GET", "/v3/messages")
    assert "GET" in anthropic_error(got, 405, "invalid_request_error")
    anthropic_error(post(small, {**BODY, "model": "nope"}), 404, "not_found_error")
    anthropic_error(post(small, {**BODY, "model": "nope", "stream": True}), 404, "not_found_error")


IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}}
# (what is changed, the field a 400 must name in its message)
BAD: list[tuple[dict[str, Any], str]] = [
    ({"max_tokens": None}, "max_tokens"),
    ({"max_tokens": 0}, "max_tokens"),
    ({"max_tokens": "24"}, "max_tokens"),
    ({"max_tokens": 2**40}, "max_tokens"),
    ({"model": None}, "model"),
    ({"model": 5}, "model"),
    ({"messages": []}, "messages"),
    ({"messages": "hi"}, "messages"),
    ({"messages": [{"role": "robot", "content": "hi"}]}, "messages[0].role"),
    ({"messages": [{"role": "system", "content": [IMAGE]}]}, "messages[0].content[0].type"),
    ({"messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
    ({"messages": [{"role": "user", "content": "hi", "name": "x"}]}, "messages[0].name"),
    ({"messages": [{"role": "user", "content": [{"type": "bogus"}]}]}, "messages[0].content[0].type"),
    ({"messages": [{"role": "user", "content": [{"type": "text"}]}]}, "messages[0].content[0].text"),
    ({"messages": [{"role": "user", "content": [{"type": "text", "text": "a", "x": 1}]}]}, "messages[0].content[0].x"),
    ({"messages": [{"role": "user", "content": [{"type": "tool_use", "id": "a", "name": "b", "input": {}}]}]},
     "messages[0].content[0].type"),
    ({"messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "b", "input": []}]}]},
     "messages[0].content[0].input"),
    ({"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a",
                                                 "content": [IMAGE]}]}]}, "messages[0].content[0].content[0].type"),
    ({"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": 5}]}]},
     "messages[0].content[0].tool_use_id"),
    ({"messages": [{"role": "user", "content": [{"type": "image", "source": {"type": "file", "file_id": "f"}}]}]},
     "messages[0].content[0].source.type"),
    ({"messages": [{"role": "user", "content": [IMAGE, {"type": "text", "text": "?"}]}]}, "messages[0]"),
    ({"system": 5}, "system"),
    ({"system": [{"type": "image", "source": {}}]}, "system[0].type"),
    ({"metadata": {"user_id": "u", "other": 1}}, "metadata.other"),
    ({"stop_sequences": "x"}, "stop_sequences"),
    ({"stop_sequences": [""]}, "stop_sequences"),
    ({"stop_sequences": [f"s{i}" for i in range(100)]}, "stop_sequences"),
    ({"stream": "yes"}, "stream"),
    ({"temperature": "hot"}, "temperature"),
    ({"temperature": 50}, "temperature"),
    ({"top_k": -5}, "top_k"),
    ({"tools": {}}, "tools"),
    ({"tools": [{"type": "web_search_20250305", "name": "web_search"}]}, "tools[0].type"),
    ({"tools": [{"name": "f"}]}, "tools[0].input_schema"),
    ({"tools": [{**WEATHER, "defer_loading": 1}]}, "tools[0].defer_loading"),
    ({"tools": [{**WEATHER, "allowed_callers": ["direct"]}]}, "tools[0].allowed_callers"),
    ({"tool_choice": {"type": "required"}}, "tool_choice.type"),
    ({"tool_choice": {"type": "tool"}}, "tool_choice.name"),
    ({"tools": [WEATHER], "tool_choice": {"type": "tool", "name": "nope"}}, "tool_choice"),
    ({"tool_choice": {"type": "auto", "disable_parallel_tool_use": "no"}}, "tool_choice.disable_parallel_tool_use"),
    ({"thinking": {"type": "on"}}, "thinking.type"),
    ({"thinking": {"type": "enabled"}}, "thinking.budget_tokens"),
    ({"thinking": {"type": "enabled", "budget_tokens": -1}}, "thinking.budget_tokens"),
    ({"thinking": {"type": "enabled", "budget_tokens": 5, "display": "all"}}, "thinking.display"),
    ({"model": "tiny-vision", "thinking": {"type": "enabled", "budget_tokens": 5}}, "thinking.budget_tokens"),
    ({"output_config": {"format": {"type": "text"}}}, "output_config.format.type"),
    ({"output_config": {"task_budget": 5}}, "output_config.task_budget"),
    ({"container": "c"}, "container"),
    ({"mcp_servers": []}, "mcp_servers"),
    ({"context_management": {"edits": []}, "diagnostics": {}}, "diagnostics"),
    ({"frobnicate": 1}, "frobnicate"),
    ({"temperature": float("inf")}, "temperature"),
]  # fmt: skip


@pytest.mark.parametrize(("change", "field"), BAD, ids=[field for _, field in BAD])
def test_bad_fields_are_refused_naming_them(bridge: RunningBridge, change: dict[str, Any], field: str) -> None:
    body = {**BODY, **change}
    for name in [name for name, value in change.items() if value is None]:
        body.pop(name)
    sent = json.dumps(body).replace("Infinity", "1e999").encode()  # (json writes inf as Infinity)
    headers = {"Content-Type": "application/json"}
    for stream in (False, True):
        streamed = sent if not stream else sent[:-1] + b', "stream": true}'
        if "stream" in change:
            streamed = sent
        message = anthropic_error(post(bridge, streamed, **headers), 400, "invalid_request_error")
        assert field in message, (field, message)


def test_count_tokens_takes_no_output_fields(bridge: RunningBridge) -> None:
    reply = post(bridge, {**BODY}, "/v1/messages/count_tokens")
    assert "max_tokens" in anthropic_error(reply, 400, "invalid_request_error")


# ---- the framing alone ----


def chunk(content: str | None = None, finish: int = 0, usage: common_pb2.Usage | None = None, **delta: Any) -> Any:
    choice = chat_pb2.ChatCompletionChunkChoice(finish_reason=finish)  # type: ignore[arg-type]
    if content is not None:
        choice.delta.content = content
    for name, value in delta.items():
        setattr(choice.delta, name, value)
    reply = chat_pb2.StreamChatCompletionResponse(id="chatcmpl-1", model=MODEL, choices=[] if usage else [choice])
    if usage is not None:
        reply.usage.CopyFrom(usage)
    return reply


def framed(framing: MessageEventFraming, chunks: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    data = b"".join(framing.event(one) or b"" for one in chunks) + framing.end()
    return events(Reply(200, None, data))  # type: ignore[arg-type]


def test_a_stop_sequence_split_over_chunks_is_never_sent() -> None:
    framing = MessageEventFraming(MODEL, ("END", "x"), True)
    usage = common_pb2.Usage(prompt_tokens=5, completion_tokens=4)
    sent = framed(framing, [chunk("Hello E"), chunk("N"), chunk("D", finish=common_pb2.FINISH_REASON_STOP),
                            chunk(usage=usage)])  # fmt: skip
    check_sequence(sent)
    text = "".join(data["delta"]["text"] for name, data in sent if name == "content_block_delta")
    assert text == "Hello "
    assert sent[-2][1]["delta"] == {"stop_reason": "stop_sequence", "stop_sequence": "END"}
    assert sent[-2][1]["usage"]["input_tokens"] == 5 and sent[-2][1]["usage"]["output_tokens"] == 4


def test_held_back_text_is_sent_when_no_stop_sequence_ends_it() -> None:
    framing = MessageEventFraming(MODEL, ("END",), True)
    sent = framed(framing, [chunk("Hello E"), chunk("N", finish=common_pb2.FINISH_REASON_LENGTH)])
    check_sequence(sent)
    assert "".join(data["delta"]["text"] for name, data in sent if name == "content_block_delta") == "Hello EN"
    assert sent[-2][1]["delta"]["stop_reason"] == "max_tokens"


def test_a_failure_after_the_start_is_an_error_event_and_the_end() -> None:
    framing = MessageEventFraming(MODEL, (), True)
    data = (framing.event(chunk("Hi")) or b"") + framing.failure(BridgeError(503, "engine gone")) + framing.end()
    sent = events(Reply(200, None, data))  # type: ignore[arg-type]
    assert [name for name, _ in sent][-1] == "error" and "message_stop" not in [name for name, _ in sent]
    assert sent[-1][1] == {"type": "error", "error": {"type": "overloaded_error", "message": "engine gone"}}


# What Claude Code 2.1.332 sends (captured from `claude -p`, its texts shortened): system blocks with cache_control,
# a system message within the conversation, context_management, adaptive thinking shown or omitted, an effort,
# metadata.user_id as a JSON string, and a deferred placeholder tool beside its client tools.
CLAUDE_CODE = {
    "model": MODEL,
    "max_tokens": 64,
    "stream": True,
    "system": [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332.34c;"},
               {"type": "text", "text": "You are a Claude agent.", "cache_control": {"type": "ephemeral"}}],
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "<system-reminder>hi</system-reminder>",
                                      "cache_control": {"type": "ephemeral"}}]},
        {"role": "system", "content": [{"type": "text", "text": "# Environment\nPlatform: linux"}]},
        {"role": "user", "content": "What's the weather like in Paris?"},
    ],
    "tools": [WEATHER, {"name": "DeferredToolPlaceholder", "description": "Never call this tool.",
                        "input_schema": {"type": "object", "properties": {}}, "defer_loading": True}],
    "metadata": {"user_id": json.dumps({"device_id": "d", "session_id": "s"})},
    "thinking": {"type": "adaptive", "display": "omitted"},
    "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
    "output_config": {"effort": "high"},
}  # fmt: skip


def test_claude_codes_request_is_served(bridge: RunningBridge) -> None:
    reply = post(bridge, CLAUDE_CODE, **{"anthropic-beta": "claude-code-20250219,context-management-2025-06-27"})
    assert reply.status == 200, reply.body
    check_sequence(events(reply))
    counted = {name: value for name, value in CLAUDE_CODE.items() if name not in ("max_tokens", "stream", "metadata")}
    deferred = post(bridge, counted, "/v1/messages/count_tokens").json()["input_tokens"]
    without = post(bridge, {**counted, "tools": [WEATHER]}, "/v1/messages/count_tokens").json()["input_tokens"]
    assert deferred == without  # the deferred tool is not in the prompt


def test_the_docs_table_has_every_field_with_the_codes_reasons() -> None:
    """docs/api/messages.md's parameters table names every field the translator takes, accepts or refuses, and
    gives the reasons the code gives (they are written in both places; this holds them equal)."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "api" / "messages.md").read_text()
    table = page.split("## Parameters", 1)[1].split("Content blocks", 1)[0]
    rows = {}
    for line in table.splitlines():
        if line.startswith("| `"):
            names, here, why = (cell.strip() for cell in line.strip("|").split("|")[:3])
            for name in names.replace("`", "").split(", "):
                rows[name] = (here, why)
    for name in anthropic.MAPPED:
        assert rows[name][0] in ("served", "mapped"), name
    for name, reason in anthropic.IGNORED.items():
        assert rows[name] == ("accepted, no effect", reason), name
    for name, reason in anthropic.REFUSED.items():
        assert rows[name] == ("refused", reason), name
