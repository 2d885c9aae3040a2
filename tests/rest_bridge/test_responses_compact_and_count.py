"""POST /v3/responses/input_tokens and POST /v3/responses/compact, through the openai client and OpenAI's schema."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from ovserve.service.responses import compaction
from tests.conformance import violations
from tests.rest_bridge.conftest import RunningBridge, http_request

MODEL = "tiny-chat"
CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS: Any = [{"type": "function", "name": "get_weather", "parameters": CITY}]
STORY = "Once upon a time a small cat lived in Oslo, by the sea, and every day it walked to the harbour. " * 6
LONG: Any = [
    item
    for turn in range(4)
    for item in (
        {"role": "user", "content": f"Tell me part {turn + 1} of the story."},
        {"role": "assistant", "content": STORY},
    )
]


def count(bridge: RunningBridge, body: dict[str, Any]) -> int:
    reply = http_request(bridge.port, "POST", "/v3/responses/input_tokens", body)
    assert reply.status == 200, reply.body
    assert reply.json()["object"] == "response.input_tokens"
    return int(reply.json()["input_tokens"])


@pytest.mark.parametrize(
    "extra",
    [{}, {"instructions": "Be brief."}, {"tools": TOOLS}, {"input": [*LONG, {"role": "user", "content": "And?"}]}],
    ids=["plain", "instructions", "tools", "history"],
)
def test_input_tokens_are_what_the_response_uses(client: openai.OpenAI, bridge: RunningBridge, extra: Any) -> None:
    body = {"model": MODEL, "input": "What is the weather in Paris?", **extra}
    counted = count(bridge, body)
    made = client.responses.create(**body, max_output_tokens=4, store=False)
    assert made.usage is not None and counted == made.usage.input_tokens


def test_input_tokens_follow_previous_response_id(client: openai.OpenAI, bridge: RunningBridge) -> None:
    first = client.responses.create(model=MODEL, input="Hello!", max_output_tokens=8)
    body = {"model": MODEL, "input": "And then?", "previous_response_id": first.id}
    assert first.usage is not None and count(bridge, body) > first.usage.input_tokens + first.usage.output_tokens - 1
    made = client.responses.create(**body, max_output_tokens=4, store=False)
    assert made.usage is not None and count(bridge, body) == made.usage.input_tokens


def test_input_tokens_validate_like_create(bridge: RunningBridge) -> None:
    for body, param in (({"model": MODEL, "input": "x", "temperature": 9}, "temperature"),
                        ({"model": MODEL, "input": "x", "stream": True}, "stream"),
                        ({"model": "nope", "input": "x"}, "model")):  # fmt: skip
        reply = http_request(bridge.port, "POST", "/v3/responses/input_tokens", body)
        assert reply.status in (400, 404) and reply.json()["error"]["param"] == param, reply.body


def test_compact_keeps_the_user_messages_and_a_summary_that_shortens_the_context(bridge: RunningBridge) -> None:
    reply = http_request(bridge.port, "POST", "/v3/responses/compact", {"model": MODEL, "input": LONG})
    assert reply.status == 200, reply.body
    body = reply.json()
    assert not violations("CompactResource", body), violations("CompactResource", body)
    output = body["output"]
    assert [item["type"] for item in output] == ["message"] * 4 + ["compaction"]
    assert [item["content"][0]["text"] for item in output[:4]] == [item["content"] for item in LONG[::2]]
    summary = compaction.decode(output[-1]["encrypted_content"])
    assert summary, "the model wrote a summary"
    assert body["usage"]["output_tokens"] > 0
    ask = {"role": "user", "content": "What happened next?"}
    whole = count(bridge, {"model": MODEL, "input": [*LONG, ask]})
    compacted = count(bridge, {"model": MODEL, "input": [*output, ask]})
    print(f"\ncompaction: {whole} input tokens -> {compacted}")
    assert compacted < whole
    # The compacted list continues the conversation as any input does.
    made = http_request(bridge.port, "POST", "/v3/responses",
                        {"model": MODEL, "input": [*output, ask], "max_output_tokens": 8, "store": False})  # fmt: skip
    assert made.status == 200 and made.json()["usage"]["input_tokens"] == compacted


def test_compact_follows_previous_response_id(client: openai.OpenAI, bridge: RunningBridge) -> None:
    first = client.responses.create(model=MODEL, input="Remember: we launch on Tuesday.", max_output_tokens=12)
    reply = http_request(bridge.port, "POST", "/v3/responses/compact",
                         {"model": MODEL, "previous_response_id": first.id, "prompt_cache_key": "k"})  # fmt: skip
    assert reply.status == 200, reply.body
    output = reply.json()["output"]
    assert output[0]["content"][0]["text"] == "Remember: we launch on Tuesday." and output[-1]["type"] == "compaction"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"input": "x"}, "model"),
        ({"model": MODEL}, "input"),
        ({"model": MODEL, "input": "x", "temperature": 0.5}, "temperature"),
        ({"model": MODEL, "previous_response_id": "resp_missing"}, "previous_response_id"),
    ],
)
def test_bad_compactions_are_refused_naming_the_field(bridge: RunningBridge, body: Any, param: str) -> None:
    reply = http_request(bridge.port, "POST", "/v3/responses/compact", body)
    assert reply.status == 400 and reply.json()["error"]["param"] == param, reply.body


def test_a_compaction_item_not_written_here_is_refused(bridge: RunningBridge) -> None:
    forged = compaction.PREFIX + "bm90IHpsaWI="
    for content in ("opaque-from-elsewhere", forged):
        body = {"model": MODEL, "input": [{"type": "compaction", "encrypted_content": content}]}
        reply = http_request(bridge.port, "POST", "/v3/responses", body)
        assert reply.status == 400 and reply.json()["error"]["param"] == "input[0].encrypted_content", reply.body


def test_a_summary_cannot_inflate_past_its_bound() -> None:
    import base64
    import zlib

    bomb = zlib.compress(b'{"summary": "' + b"a" * (compaction.MAX_SUMMARY_BYTES * 4) + b'"}')
    assert compaction.decode(compaction.PREFIX + base64.urlsafe_b64encode(bomb).decode()) is None
    assert compaction.decode(compaction.encode("short")) == "short"
