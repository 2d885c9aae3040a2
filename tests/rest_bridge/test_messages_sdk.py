"""Anthropic's Messages API on the bridge, as the official ``anthropic`` SDK sees it, on the bundled models.

Unary and streamed: plain text, a system prompt, an image (tiny-vision names its colour), a tool round trip with
a forced tool, thinking (tiny-chat's template has a thinking mode), stop sequences; the SDK's stream helpers
assemble the message the unary call returns; count_tokens is the chat path's prompt_tokens; errors are the SDK's
exception types; x-api-key and Bearer keys against the server's API keys.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from ovserve.service.models import BUNDLED_VISION, ModelSpec
from tests import documents
from tests.conftest import TEST_SETTINGS, TINY_CHAT
from tests.images import encoded
from tests.rest_bridge.conftest import RunningBridge, http_request, served_with_bridge
from tests.rest_bridge.test_vision import COLOURS

MODEL = "tiny-chat"
ASK = [{"role": "user", "content": "What's the weather like in Paris?"}]
SYSTEM = "You are a pirate who answers every question in rhyming verse."
WEATHER = {
    "name": "get_weather",
    "description": "Get the current weather in a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string", "description": "The city name."}},
                     "required": ["city"]},
}  # fmt: skip
TIME = {**WEATHER, "name": "get_time", "description": "Get the local time in a city."}
KEYS = ["key-one"]


def sdk(url: str, **keys: Any) -> anthropic.Anthropic:
    """The SDK pointed at a bridge as a user would point it (its base URL is the host: it adds /v1)."""
    return anthropic.Anthropic(base_url=url.removesuffix("/v3"), max_retries=0, timeout=120, **keys)


@pytest.fixture(scope="module")
def claude(bridge: RunningBridge) -> Iterator[anthropic.Anthropic]:
    with sdk(bridge.url, api_key="any-key") as opened:
        yield opened


# Greedy, so two calls give one answer: SDK 2.x has no temperature argument any more, older ones and raw HTTP send it.
GREEDY = {"temperature": 0}


def create(client: anthropic.Anthropic, **fields: Any) -> anthropic.types.Message:
    body = {"model": MODEL, "max_tokens": 40, "messages": ASK, "extra_body": GREEDY, **fields}
    return client.messages.create(**body)


def streamed(client: anthropic.Anthropic, **fields: Any) -> tuple[anthropic.types.Message, list[Any]]:
    """The stream helper's final message and the events it saw."""
    body = {"model": MODEL, "max_tokens": 40, "messages": ASK, "extra_body": GREEDY, **fields}
    with client.messages.stream(**body) as stream:
        events = list(stream)
        return stream.get_final_message(), events


def same_message(unary: anthropic.types.Message, assembled: anthropic.types.Message) -> None:
    """The stream assembled what the unary call returned, ids aside (each call has its own); a prefix-cache hit
    moves prompt tokens between input_tokens and cache_read_input_tokens, so their sum is compared."""
    one, other = unary.model_dump(), assembled.model_dump()
    for message in (one, other):
        assert message.pop("id").startswith("msg_")
        for block in message["content"]:
            if block["type"] == "tool_use":
                assert block.pop("id").startswith("toolu_")
        counted = message.pop("usage")
        message["prompt"] = counted["input_tokens"] + (counted["cache_read_input_tokens"] or 0)
        message["output_tokens"] = counted["output_tokens"]
    assert one == other


def chat_prompt_tokens(bridge: RunningBridge, **fields: Any) -> int:
    with openai.OpenAI(base_url=bridge.url, api_key="any-key", max_retries=0) as client:
        reply = client.chat.completions.create(model=MODEL, max_tokens=1, **fields)
    return reply.usage.prompt_tokens


def test_text_unary_and_streamed(claude: anthropic.Anthropic) -> None:
    unary = create(claude)
    assert unary.type == "message" and unary.role == "assistant" and unary.model == MODEL
    assert unary.id.startswith("msg_")
    (block,) = unary.content
    assert block.type == "text" and block.text
    assert unary.stop_reason in ("end_turn", "max_tokens") and unary.stop_sequence is None
    assert unary.usage.input_tokens + unary.usage.cache_read_input_tokens > 0 and unary.usage.output_tokens > 0
    message, events = streamed(claude)
    same_message(unary, message)
    kinds = [event.type for event in events]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop" and "message_delta" in kinds
    assert "".join(event.delta.text for event in events if event.type == "content_block_delta") == block.text


def test_system_prompt_reaches_the_template(claude: anthropic.Anthropic, bridge: RunningBridge) -> None:
    plain, with_system = create(claude), create(claude, system=SYSTEM)
    as_blocks = create(claude, system=[{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}])
    chat = chat_prompt_tokens(bridge, messages=[{"role": "system", "content": SYSTEM}, *ASK])

    def prompt(message: anthropic.types.Message) -> int:
        return message.usage.input_tokens + (message.usage.cache_read_input_tokens or 0)

    assert prompt(with_system) == prompt(as_blocks) == chat != prompt(plain)
    same_message(with_system, streamed(claude, system=SYSTEM)[0])


def test_image_base64_unary_and_streamed(claude: anthropic.Anthropic) -> None:
    for colour in ("red", "blue"):
        data = base64.b64encode(encoded(COLOURS[colour], (48, 40), "PNG")).decode()
        image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
        ask = [{"role": "user", "content": [image, {"type": "text", "text": "What colour is this image?"}]}]
        reply = create(claude, model=BUNDLED_VISION, messages=ask)
        assert colour in reply.content[0].text.lower()
        same_message(reply, streamed(claude, model=BUNDLED_VISION, messages=ask)[0])


@pytest.mark.parametrize("choice", [{"type": "any"}, {"type": "tool", "name": "get_weather"}])
def test_forced_tool_round_trip(claude: anthropic.Anthropic, choice: dict[str, Any]) -> None:
    tools = [WEATHER, TIME]
    first = create(claude, tools=tools, tool_choice={**choice, "disable_parallel_tool_use": True}, max_tokens=60)
    assert first.stop_reason == "tool_use"
    (call,) = [block for block in first.content if block.type == "tool_use"]
    assert call.id.startswith("toolu_") and call.name == "get_weather" and isinstance(call.input["city"], str)
    same_message(first, streamed(claude, tools=tools, tool_choice=choice, max_tokens=60)[0])

    result = {"type": "tool_result", "tool_use_id": call.id, "content": "Sunny, 21 degrees."}
    turns = [*ASK, {"role": "assistant", "content": first.content}, {"role": "user", "content": [result]}]
    second = create(claude, tools=tools, messages=turns)
    assert second.stop_reason in ("end_turn", "max_tokens", "tool_use") and second.content
    failed = {**result, "is_error": True, "content": [{"type": "text", "text": "the weather service is down"}]}
    third = create(claude, tools=tools, messages=[*turns[:2], {"role": "user", "content": [failed]}])
    assert third.usage.input_tokens + third.usage.cache_read_input_tokens != second.usage.input_tokens


def test_tool_choice_none_and_auto(claude: anthropic.Anthropic) -> None:
    """none: no call; auto: tiny-chat calls the weather tool of itself."""
    never = create(claude, tools=[WEATHER], tool_choice={"type": "none"}, max_tokens=60)
    assert all(block.type != "tool_use" for block in never.content) and never.stop_reason != "tool_use"
    chosen = create(claude, tools=[WEATHER, TIME], tool_choice={"type": "auto"}, max_tokens=60)
    assert chosen.stop_reason == "tool_use" and [b.name for b in chosen.content if b.type == "tool_use"]


def test_structured_output_follows_the_schema(claude: anthropic.Anthropic) -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "string", "maxLength": 8}}, "required": ["answer"],
              "additionalProperties": False}  # fmt: skip
    reply = create(claude, max_tokens=60, output_config={"format": {"type": "json_schema", "schema": schema}})
    assert reply.stop_reason == "end_turn", reply
    assert set(json.loads(reply.content[0].text)) == {"answer"}


def test_documents_reach_the_prompt(claude: anthropic.Anthropic) -> None:
    """A PDF (its text layer read as the chat path reads a file part) and a text source add to the prompt."""
    data = base64.b64encode(documents.pdf(["the plum is in the drawer"])).decode()
    pdf = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": data},
           "title": "note.pdf"}  # fmt: skip
    text = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "the plum"}}
    ask = {"type": "text", "text": "Where is the plum?"}
    bare = claude.messages.count_tokens(model=MODEL, messages=[{"role": "user", "content": [ask]}]).input_tokens
    for document in (pdf, text):
        content = [document, ask]
        counted = claude.messages.count_tokens(model=MODEL, messages=[{"role": "user", "content": content}])
        assert counted.input_tokens > bare
        reply = create(claude, messages=[{"role": "user", "content": content}], max_tokens=4)
        assert reply.usage.input_tokens + reply.usage.cache_read_input_tokens == counted.input_tokens


def test_thinking_comes_back_as_a_thinking_block(claude: anthropic.Anthropic) -> None:
    reply = create(claude, thinking={"type": "enabled", "budget_tokens": 8}, max_tokens=60,
                   messages=[{"role": "user", "content": "Hello!"}])  # fmt: skip
    kinds = [block.type for block in reply.content]
    assert kinds[0] == "thinking" and reply.content[0].thinking and reply.content[0].signature == ""
    assert "<think>" not in reply.content[0].thinking
    message, events = streamed(claude, thinking={"type": "enabled", "budget_tokens": 8}, max_tokens=60,
                               messages=[{"role": "user", "content": "Hello!"}])  # fmt: skip
    same_message(reply, message)
    assert any(event.type == "content_block_delta" and event.delta.type == "thinking_delta" for event in events)
    off = create(claude, thinking={"type": "disabled"}, messages=[{"role": "user", "content": "Hello!"}])
    assert all(block.type != "thinking" for block in off.content)
    hidden = create(claude, thinking={"type": "enabled", "budget_tokens": 8, "display": "omitted"}, max_tokens=60,
                    messages=[{"role": "user", "content": "Hello!"}])  # fmt: skip
    assert hidden.content[0].type == "thinking" and hidden.content[0].thinking == ""


def test_count_tokens_is_the_chat_paths_prompt_tokens(claude: anthropic.Anthropic, bridge: RunningBridge) -> None:
    counted = claude.messages.count_tokens(model=MODEL, messages=ASK, system=SYSTEM)
    assert counted.input_tokens == chat_prompt_tokens(bridge, messages=[{"role": "system", "content": SYSTEM}, *ASK])
    with_tools = claude.messages.count_tokens(model=MODEL, messages=ASK, tools=[WEATHER])
    chat_tool = {"type": "function", "function": {"name": WEATHER["name"], "description": WEATHER["description"],
                                                  "parameters": WEATHER["input_schema"]}}  # fmt: skip
    assert with_tools.input_tokens == chat_prompt_tokens(bridge, messages=ASK, tools=[chat_tool])
    assert with_tools.input_tokens > claude.messages.count_tokens(model=MODEL, messages=ASK).input_tokens
    reply = create(claude, tools=[WEATHER])
    assert reply.usage.input_tokens + reply.usage.cache_read_input_tokens == with_tools.input_tokens


def test_stop_sequences_unary_and_streamed(claude: anthropic.Anthropic) -> None:
    free = create(claude, max_tokens=60).content[0].text
    words = free.split()
    assert len(words) > 3, free
    stop = words[2]
    unary = create(claude, max_tokens=60, stop_sequences=["not-in-the-text-at-all", stop])
    assert unary.stop_reason == "stop_sequence" and unary.stop_sequence == stop
    assert unary.content[0].text == free[: free.index(stop)]
    message, events = streamed(claude, max_tokens=60, stop_sequences=["not-in-the-text-at-all", stop])
    same_message(unary, message)
    sent = "".join(event.delta.text for event in events if event.type == "content_block_delta")
    assert sent == unary.content[0].text and stop not in sent[len(free[: free.index(stop)]) :]


def test_errors_are_the_sdks_exception_types(claude: anthropic.Anthropic) -> None:
    with pytest.raises(anthropic.NotFoundError) as missing:
        create(claude, model="no-such-model")
    assert missing.value.body["error"]["type"] == "not_found_error"
    with pytest.raises(anthropic.BadRequestError) as bad:
        claude.messages.create(model=MODEL, max_tokens=0, messages=ASK)
    assert bad.value.body["type"] == "error" and "max_tokens" in bad.value.body["error"]["message"]
    with pytest.raises(anthropic.BadRequestError) as refused:
        create(claude, extra_body={**GREEDY, "container": "container_1"})
    assert "container" in refused.value.body["error"]["message"]
    with pytest.raises(anthropic.BadRequestError) as server_tool:
        create(claude, tools=[{"type": "web_search_20250305", "name": "web_search"}])
    assert "tools[0].type" in server_tool.value.body["error"]["message"]
    with (
        pytest.raises(anthropic.BadRequestError) as streamed_bad,
        claude.messages.stream(model=MODEL, max_tokens=10, messages=[{"role": "robot", "content": "hi"}]) as stream,
    ):
        list(stream)
    assert "messages[0].role" in streamed_bad.value.body["error"]["message"]


@pytest.fixture(scope="module")
def keyed() -> Iterator[RunningBridge]:
    with served_with_bridge([ModelSpec(MODEL, TINY_CHAT, settings=TEST_SETTINGS)], api_keys=KEYS) as running:
        yield running


def test_x_api_key_and_bearer_against_the_servers_keys(keyed: RunningBridge) -> None:
    """Both of Anthropic's ways of sending a key are checked against the server's keys."""
    for keys in ({"api_key": KEYS[0]}, {"auth_token": KEYS[0]}):
        with sdk(keyed.url, **keys) as client:
            assert create(client, max_tokens=3).usage.output_tokens == 3
            assert client.messages.count_tokens(model=MODEL, messages=ASK).input_tokens > 0
    for keys in ({"api_key": "wrong"}, {"auth_token": "wrong"}):
        with sdk(keyed.url, **keys) as client, pytest.raises(anthropic.AuthenticationError) as refused:
            create(client)
        assert refused.value.body["error"]["type"] == "authentication_error"
    # A key gRPC metadata cannot carry (not printable ASCII) is a wrong key too, not a server error.
    body = {"model": MODEL, "max_tokens": 2, "messages": ASK}
    for header in ({"x-api-key": "k\u00e9y"}, {"Authorization": "Bearer k\u00e9y"}):
        reply = http_request(keyed.port, "POST", "/v1/messages", body, header)
        assert reply.status == 401 and reply.json()["error"]["type"] == "authentication_error", reply.body
