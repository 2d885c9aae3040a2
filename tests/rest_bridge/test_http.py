"""Raw HTTP against the bridge: SSE framing, headers, routes, health, and every bad input with its envelope."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.rest_bridge.conftest import RunningBridge, http_request

CHAT = "/v3/chat/completions"
COMPLETIONS = "/v3/completions"
HI = [{"role": "user", "content": "hi"}]


def chat_body(**fields: Any) -> dict[str, Any]:
    """A small valid chat body with ``fields`` on top."""
    return {"model": "tiny-chat", "messages": HI, "max_tokens": 4, "temperature": 0, **fields}


def completion_body(**fields: Any) -> dict[str, Any]:
    """A small valid completions body with ``fields`` on top."""
    return {"model": "tiny-chat", "prompt": "Once upon a time", "max_tokens": 4, "temperature": 0, **fields}


@pytest.mark.parametrize("path", [CHAT, COMPLETIONS])
def test_sse_framing_data_lines_blank_lines_done_last(bridge: RunningBridge, path: str) -> None:
    fields = {"stream": True, "max_tokens": 10, "ignore_eos": True}
    body = chat_body(**fields) if path == CHAT else completion_body(**fields)
    reply = http_request(bridge.port, "POST", path, body)
    assert reply.status == 200
    assert reply.headers["Content-Type"].startswith("text/event-stream")
    assert reply.headers["Cache-Control"] == "no-cache"
    text = reply.body.decode()
    assert text.endswith("data: [DONE]\n\n") and text.count("[DONE]") == 1
    # Every event is exactly one "data: " line followed by a blank line.
    assert re.fullmatch(r"(data: [^\n]+\n\n)+", text), text
    events = reply.events()
    chunks = [json.loads(event) for event in events[:-1]]
    assert all(isinstance(chunk["created"], int) and chunk["id"] for chunk in chunks)
    assert all("usage" not in chunk for chunk in chunks)  # no include_usage: no usage key at all
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
    assert all(c["finish_reason"] is None for chunk in chunks[:-1] for c in chunk["choices"])


def test_chat_chunks_are_openai_exact(bridge: RunningBridge) -> None:
    body = chat_body(stream=True, ignore_eos=True, stream_options={"include_usage": True})
    reply = http_request(bridge.port, "POST", CHAT, body)
    chunks = [json.loads(event) for event in reply.events()[:-1]]
    first = chunks[0]
    # No system_fingerprint: OpenAI's schema has it a string when present, and there is none to give.
    assert set(first) == {"id", "object", "created", "model", "choices", "usage", "service_tier"}
    assert first["object"] == "chat.completion.chunk"
    # docs/api/parameters.md: the reply says "default"
    assert all(chunk["service_tier"] == "default" for chunk in chunks)
    assert first["choices"] == [
        {"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None}
    ]
    assert all(chunk["usage"] is None for chunk in chunks[:-1])  # include_usage: null until the last chunk
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 4


def test_unary_chat_body_is_openai_exact(bridge: RunningBridge) -> None:
    reply = http_request(bridge.port, "POST", CHAT, chat_body())
    assert reply.status == 200 and reply.headers["Content-Type"] == "application/json"
    body = reply.json()
    assert set(body) == {"id", "object", "created", "model", "choices", "usage", "service_tier"}
    assert body["object"] == "chat.completion" and isinstance(body["created"], int)
    assert body["service_tier"] == "default"  # docs/api/parameters.md: one tier here, the reply says "default"
    (choice,) = body["choices"]
    assert set(choice) == {"index", "message", "logprobs", "finish_reason"} and choice["logprobs"] is None
    assert choice["message"]["role"] == "assistant" and isinstance(choice["message"]["content"], str)
    assert choice["message"]["refusal"] is None and "tool_calls" not in choice["message"]
    assert set(body["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}


@pytest.mark.parametrize("stream", [False, True])
def test_chat_replies_name_the_one_service_tier_whatever_was_asked(bridge: RunningBridge, stream: bool) -> None:
    reply = http_request(bridge.port, "POST", CHAT, chat_body(service_tier="flex", stream=stream))
    objects = [json.loads(event) for event in reply.events()[:-1]] if stream else [reply.json()]
    assert objects and all(sent["service_tier"] == "default" for sent in objects)


def test_request_id_echoed_or_generated(bridge: RunningBridge) -> None:
    sent = http_request(bridge.port, "POST", CHAT, chat_body(), {"x-request-id": "abc-1"})
    assert sent.headers["x-request-id"] == "abc-1"
    generated = http_request(bridge.port, "POST", CHAT, chat_body())
    other = http_request(bridge.port, "GET", "/v3/models")
    assert re.fullmatch(r"[0-9a-f]{32}", generated.headers["x-request-id"])
    assert generated.headers["x-request-id"] != other.headers["x-request-id"]
    failed = http_request(bridge.port, "POST", CHAT, b"nope", {"Content-Type": "application/json", "x-request-id": "e"})
    assert failed.status == 400 and failed.headers["x-request-id"] == "e"
    streamed = http_request(bridge.port, "POST", CHAT, chat_body(stream=True), {"x-request-id": "s-2"})
    assert streamed.headers["x-request-id"] == "s-2"


def test_authorization_is_accepted_and_forwarded(bridge: RunningBridge) -> None:
    reply = http_request(bridge.port, "POST", CHAT, chat_body(), {"Authorization": "Bearer sk-anything"})
    assert reply.status == 200


@pytest.mark.parametrize("prefix", ["/v1", "/v3"])
def test_v1_alias_serves_every_route(bridge: RunningBridge, prefix: str) -> None:
    assert http_request(bridge.port, "POST", f"{prefix}/chat/completions", chat_body()).status == 200
    assert http_request(bridge.port, "POST", f"{prefix}/completions", completion_body()).status == 200
    assert http_request(bridge.port, "GET", f"{prefix}/models").json()["data"][0]["id"] == "tiny-chat"
    model = http_request(bridge.port, "GET", f"{prefix}/models/tiny-chat").json()
    assert model["object"] == "model" and isinstance(model["created"], int) and model["max_model_len"] > 0


def test_health_is_200_when_serving(bridge: RunningBridge) -> None:
    reply = http_request(bridge.port, "GET", "/health")
    assert reply.status == 200 and reply.json() == {"status": "SERVING"}


def test_health_is_503_when_the_backend_is_unreachable(bridge: RunningBridge) -> None:
    """A bridge whose gRPC target is not listening: /health 503, API calls 503 in the envelope."""
    from ovserve.rest_bridge.config import BridgeSettings
    from ovserve.rest_bridge.server import Bridge

    lost = Bridge("127.0.0.1:1", "127.0.0.1", 0, BridgeSettings(health_timeout_seconds=2, deadline_seconds=5))
    bridge.server.run(lost.start())
    try:
        health = http_request(lost.port, "GET", "/health")
        assert health.status == 503 and health.json()["status"].startswith("UNREACHABLE")
        reply = http_request(lost.port, "GET", "/v3/models")
        assert reply.status == 503
        assert reply.json()["error"]["type"] == "service_unavailable_error"
    finally:
        bridge.server.run(lost.stop())


def nested(levels: int) -> dict[str, Any]:
    """``{"a": {"a": ... 1}}``, ``levels`` objects deep."""
    value: Any = 1
    for _ in range(levels):
        value = {"a": value}
    return value


def raw_chat(extra: str) -> bytes:
    """A chat body with ``extra`` written as raw JSON text (for what json.dumps will not write)."""
    return (
        '{"model": "tiny-chat", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2, ' + extra + "}"
    ).encode()


DEEP = {"chat_template_kwargs": json.loads('{"a":' * 70 + "1" + "}" * 70)}
JSON = {"Content-Type": "application/json"}
# 1.2 MB of tool parameters: refused by the service's schema size limit (ovserve.service.structured.limits).
HUGE_TOOL = {"type": "function", "function": {"name": "huge", "parameters": {"type": "object", "properties": {
    f"p{i}": {"type": "string", "description": "x" * 200} for i in range(5000)}}}}  # fmt: skip

# (id, method, path, body, extra headers, status, param, code)
BAD_INPUTS: list[tuple[str, str, str, Any, dict[str, str], int, str | None, str | None]] = [
    ("not-json", "POST", CHAT, b"{nope", JSON, 400, None, None),
    ("invalid-utf8", "POST", CHAT, b'{"model": "\xff"}', JSON, 400, None, None),
    ("array-body", "POST", CHAT, b"[1, 2]", JSON, 400, None, None),
    ("string-body", "POST", CHAT, b'"hi"', JSON, 400, None, None),
    ("empty-body", "POST", CHAT, b"", JSON, 400, None, None),
    ("too-deep", "POST", CHAT, chat_body(**DEEP), {}, 400, "chat_template_kwargs" + ".a" * 31, None),
    # deep enough to fail protobuf's decoder in the service (35 levels there): the bridge names the field first
    ("deep-tool-schema", "POST", CHAT, chat_body(tools=[{"type": "function", "function": {"name": "f",
     "parameters": nested(40)}}]), {}, 400, "tools[0].function.parameters" + ".a" * 28, None),
    ("deep-list", "POST", CHAT, chat_body(chat_template_kwargs={"x": json.loads("[" * 40 + "]" * 40)}), {}, 400,
     "chat_template_kwargs.x" + "[0]" * 30, None),
    ("deep-guided-json", "POST", COMPLETIONS, completion_body(guided_json=nested(45)), {}, 400,
     "guided_json" + ".a" * 31, None),
    ("nan", "POST", CHAT, raw_chat('"temperature": NaN'), JSON, 400, "temperature", None),
    ("infinity", "POST", CHAT, raw_chat('"top_p": Infinity'), JSON, 400, "top_p", None),
    ("minus-infinity", "POST", CHAT, raw_chat('"presence_penalty": -Infinity'), JSON, 400, "presence_penalty", None),
    ("overflowing-number", "POST", CHAT, raw_chat('"temperature": 1e309'), JSON, 400, "temperature", None),
    ("nan-in-schema", "POST", CHAT, raw_chat('"response_format": {"type": "json_schema", "json_schema": '
     '{"name": "x", "schema": {"type": "number", "maximum": NaN}}}'), JSON, 400,
     "response_format.json_schema.schema.maximum", None),
    ("surrogate-in-unknown-key", "POST", CHAT, raw_chat('"k\\ud800": 1'), JSON, 400, "k\\ud800", None),
    ("surrogate-in-content", "POST", CHAT, b'{"model": "tiny-chat", "messages": [{"role": "user", '
     b'"content": "a\\udc00b"}]}', JSON, 400, "messages[0].content", None),
    ("surrogate-in-prompt", "POST", COMPLETIONS, b'{"model": "tiny-chat", "prompt": "\\ud800"}', JSON, 400,
     "prompt", None),
    ("surrogate-in-responses-input", "POST", "/v3/responses", b'{"model": "tiny-chat", "input": "\\ud800"}', JSON,
     400, "input", None),
    ("nan-in-responses", "POST", "/v3/responses", b'{"model": "tiny-chat", "input": "hi", "temperature": NaN}',
     JSON, 400, "temperature", None),
    ("very-deep", "POST", CHAT, b"[" * 100_000 + b"]" * 100_000, JSON, 400, None, None),
    ("text-plain", "POST", CHAT, b"{}", {"Content-Type": "text/plain"}, 415, None, "unsupported_media_type"),
    ("form-encoded", "POST", COMPLETIONS, b"a=b", {"Content-Type": "application/x-www-form-urlencoded"}, 415,
     None, "unsupported_media_type"),
    ("too-large", "POST", CHAT, chat_body(messages=[{"role": "user", "content": "x" * (10 * 1024 * 1024)}]), {},
     413, None, "request_too_large"),
    ("unknown-field", "POST", CHAT, chat_body(frobnicate=True), {}, 400, "frobnicate", None),
    ("unsupported-openai-field", "POST", CHAT, chat_body(audio={"voice": "alloy", "format": "wav"}), {}, 400, "audio",
     None),
    ("proto-name-not-openai", "POST", CHAT, chat_body(stop_sequences=["x"]), {}, 400, "stop_sequences", None),
    ("messages-not-list", "POST", CHAT, chat_body(messages="hi"), {}, 400, "messages", None),
    ("message-null", "POST", CHAT, chat_body(messages=[None]), {}, 400, "messages[0]", None),
    ("content-number", "POST", CHAT, chat_body(messages=[{"role": "user", "content": 5}]), {}, 400,
     "messages[0].content", None),
    ("content-part-bad-type", "POST", CHAT,
     chat_body(messages=[{"role": "user", "content": [{"type": "text", "text": 5}]}]), {}, 400,
     "messages[0].content[0].text", None),
    ("message-unknown-field", "POST", CHAT, chat_body(messages=[{"role": "user", "content": "x", "mood": "ok"}]), {},
     400, "messages[0].mood", None),
    ("role-not-string", "POST", CHAT, chat_body(messages=[{"role": 1, "content": "x"}]), {}, 400,
     "messages[0].role", None),
    ("temperature-string", "POST", CHAT, chat_body(temperature="hot"), {}, 400, "temperature", None),
    ("n-float", "POST", CHAT, chat_body(n=1.5), {}, 400, "n", None),
    ("stream-string", "POST", CHAT, chat_body(stream="yes"), {}, 400, "stream", None),
    ("include-usage-string", "POST", CHAT, chat_body(stream=True, stream_options={"include_usage": "y"}), {}, 400,
     "stream_options.include_usage", None),
    ("seed-out-of-range", "POST", CHAT, chat_body(seed=2**70), {}, 400, "seed", None),
    ("metadata-not-string", "POST", CHAT, chat_body(metadata={"team": 7}), {}, 400, "metadata.team", None),
    ("stop-list-of-numbers", "POST", CHAT, chat_body(stop=[1, 2]), {}, 400, "stop", None),
    # refused by the service: the bridge maps the gRPC status and the BadRequest field
    ("top-p-out-of-range", "POST", CHAT, chat_body(top_p=3), {}, 400, "top_p", None),
    ("no-messages", "POST", CHAT, chat_body(messages=[]), {}, 400, "messages", None),
    ("unknown-role", "POST", CHAT, chat_body(messages=[{"role": "robot", "content": "x"}]), {}, 400,
     "messages[0].role", None),
    ("model-missing", "POST", CHAT, {"messages": HI}, {}, 400, "model", None),
    ("model-unknown", "POST", CHAT, chat_body(model="gpt-4"), {}, 404, "model", "model_not_found"),
    ("stop-empty-string-in-list", "POST", CHAT, chat_body(stop=["ok", ""]), {}, 400, "stop", None),
    ("tool-schema-1mb", "POST", CHAT, chat_body(tools=[HUGE_TOOL], tool_choice="required"), {}, 400,
     "tools[0].function.parameters", None),
    ("schema-too-many-properties", "POST", CHAT, chat_body(response_format={"type": "json_schema", "json_schema": {
        "name": "x", "schema": {"type": "object", "properties": {f"p{i}": {} for i in range(5000)}}}}), {}, 400,
     "response_format.json_schema.schema.properties", None),
    ("image-part-text-model", "POST", CHAT,
     chat_body(messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,"}}]}]),
     {}, 400, "messages[0].content[0].image_url", None),
    ("tool-choice-auto-without-tools", "POST", CHAT, chat_body(tool_choice="auto"), {}, 400, "tool_choice", None),
    ("tool-choice-none-without-tools", "POST", CHAT, chat_body(tool_choice="none"), {}, 400, "tool_choice", None),
    ("named-tool-choice", "POST", CHAT, chat_body(tool_choice={"type": "function", "function": {"name": "f"}}), {},
     400, "tool_choice", None),
    ("stream-options-without-stream", "POST", CHAT, chat_body(stream_options={"include_usage": True}), {}, 400,
     "stream_options", None),
    ("max-tokens-zero", "POST", CHAT, chat_body(max_tokens=0), {}, 400, "max_tokens", None),
    ("streamed-bad-temperature", "POST", CHAT, chat_body(stream=True, temperature=-1), {}, 400, "temperature", None),
    ("prompt-mixed-list", "POST", COMPLETIONS, completion_body(prompt=[1, "a"]), {}, 400, "prompt", None),
    ("prompt-missing", "POST", COMPLETIONS, {"model": "tiny-chat"}, {}, 400, "prompt", None),
    ("prompt-token-outside-vocab", "POST", COMPLETIONS, completion_body(prompt=[10**9]), {}, 400, "prompt", None),
    ("completion-logprobs-too-many", "POST", COMPLETIONS, completion_body(logprobs=6), {}, 400, "logprobs", None),
    ("completion-unknown-field", "POST", COMPLETIONS, completion_body(messages=HI), {}, 400, "messages", None),
    ("get-on-post-route", "GET", COMPLETIONS, None, {}, 405, None, None),  # GET on CHAT lists stored ones
    ("post-on-get-route", "POST", "/v3/models", b"{}", JSON, 405, None, None),
    ("unknown-route", "POST", "/v3/videos/generations", completion_body(), {}, 404, None, None),
    ("unknown-model-route", "GET", "/v3/models/org/not-served", None, {}, 404, "model", "model_not_found"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("method", "path", "body", "headers", "status", "param", "code"),
    [case[1:] for case in BAD_INPUTS],
    ids=[case[0] for case in BAD_INPUTS],
)
def test_bad_input_gets_its_status_and_envelope(
    bridge: RunningBridge, method: str, path: str, body: Any, headers: dict[str, str], status: int,
    param: str | None, code: str | None,
) -> None:  # fmt: skip
    reply = http_request(bridge.port, method, path, body, headers)
    assert reply.status == status, reply.body
    assert reply.headers["Content-Type"] == "application/json"
    envelope = reply.json()
    assert set(envelope) == {"error"}
    error = envelope["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert isinstance(error["message"], str) and error["message"]
    expected_type = "invalid_request_error" if status < 500 else "server_error"
    assert error["type"] == expected_type
    assert error["param"] == param, error["message"]
    assert error["code"] == code


def test_bad_input_table_is_large_enough() -> None:
    assert len(BAD_INPUTS) >= 25


def test_connection_keeps_working_after_errors(bridge: RunningBridge) -> None:
    """A 400 and a 413 on one keep-alive connection do not break the next request on it."""
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", bridge.port, timeout=60)
    try:
        for body, status in [(b"{nope", 400), (json.dumps(chat_body()).encode(), 200)]:
            connection.request("POST", CHAT, body=body, headers=JSON)
            response = connection.getresponse()
            response.read()
            assert response.status == status
    finally:
        connection.close()
