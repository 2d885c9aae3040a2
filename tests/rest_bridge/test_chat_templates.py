"""Published chat templates on a served model, end to end: refusals as 400s, tool history as clients send it.

tiny-chat is served under published templates given with ``--chat-template`` (ModelSpec.chat_template):
Gemma 2's (refuses two user turns in a row), QwQ's (splits an assistant turn's content without a check) and
Mistral Nemo's (wants 9-character call ids, parsed with the mistral tool parser).
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rest_bridge.server import Bridge
from service.models import ModelSpec
from tests.conftest import TEST_SETTINGS, TINY_CHAT, start_server
from tests.rest_bridge.conftest import RunningBridge, http_request

TEMPLATES = Path(__file__).resolve().parents[1] / "data" / "chat_templates"
SERVED = {
    "tiny-gemma2": TEMPLATES / "google-gemma-2-2b-it.jinja",
    "tiny-qwq": TEMPLATES / "Qwen-QwQ-32B.jinja",
    "tiny-mistral": TEMPLATES / "mistralai-Mistral-Nemo-Instruct-2407.jinja",
}
CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather.", "parameters": CITY}}]


@pytest.fixture(scope="module")
def templated() -> Iterator[RunningBridge]:
    specs = [ModelSpec(name, TINY_CHAT, settings=TEST_SETTINGS, chat_template=path) for name, path in SERVED.items()]
    server = start_server(specs)
    running = Bridge(server.target, "127.0.0.1", 0)
    server.run(running.start())
    yield RunningBridge(running, server)
    server.run(running.stop())
    server.stop()


def chat(bridge: RunningBridge, model: str, messages: list[dict[str, Any]], **extra: Any) -> Any:
    body = {"model": model, "messages": messages, "max_tokens": 4, "temperature": 0, **extra}
    return http_request(bridge.port, "POST", "/v3/chat/completions", body)


def test_a_template_refusal_is_the_same_400_every_time(templated: RunningBridge) -> None:
    messages = [{"role": "user", "content": "Hi"}, {"role": "user", "content": "Hi again"}]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        replies = list(pool.map(lambda _: chat(templated, "tiny-gemma2", messages), range(20)))
    assert {reply.status for reply in replies} == {400}, [reply.body[:200] for reply in replies]
    bodies = {reply.body for reply in replies}
    assert len(bodies) == 1
    error = replies[0].json()["error"]
    assert error["param"] == "messages"
    assert "Conversation roles must alternate" in error["message"] and len(error["message"]) < 700


def test_tool_history_as_openai_clients_send_it(templated: RunningBridge) -> None:
    """An assistant turn of tool calls with ``content: null`` and an OpenAI-style call id, then the result."""
    history = [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_8f2c1e0b9a7d4c3e2f1a0b9c", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call_8f2c1e0b9a7d4c3e2f1a0b9c", "content": "18 C"},
    ]  # fmt: skip
    for model in ("tiny-qwq", "tiny-mistral"):
        reply = chat(templated, model, history, tools=TOOLS)
        assert reply.status == 200, (model, reply.body[:300])
        assert reply.json()["choices"][0]["message"]["role"] == "assistant"


def test_the_listing_says_where_the_template_came_from(templated: RunningBridge) -> None:
    listed = {item["id"]: item for item in http_request(templated.port, "GET", "/v3/models").json()["data"]}
    for name, path in SERVED.items():
        assert listed[name]["chat_template_source"] == f"--chat-template {path}"
    assert listed["tiny-mistral"]["tool_parser"] == "mistral"
    assert listed["tiny-qwq"]["tool_parser"] == "hermes" and listed["tiny-qwq"]["reasoning_parser"] == "think"
    assert listed["tiny-gemma2"]["tool_parser"] is None  # no tool markup in Gemma 2's template
    one = http_request(templated.port, "GET", "/v3/models/tiny-mistral").json()
    assert one == listed["tiny-mistral"]
