"""Published chat templates on a served model, end to end: refusals as 400s, tool history as clients send it.

tiny-chat is served under published templates given with ``--chat-template`` (ModelSpec.chat_template):
Gemma 2's (refuses two user turns in a row), QwQ's (splits an assistant turn's content without a check) and
Mistral Nemo's (wants 9-character call ids, parsed with the mistral tool parser).
"""

from __future__ import annotations

import concurrent.futures
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ovserve.service.models import ModelSpec
from tests.conftest import TEST_SETTINGS, TINY_CHAT
from tests.rest_bridge.conftest import RunningBridge, http_request, served_with_bridge

TEMPLATES = Path(__file__).resolve().parents[1] / "data" / "chat_templates"
SERVED = {
    "tiny-gemma2": TEMPLATES / "google-gemma-2-2b-it.jinja",
    "tiny-qwq": TEMPLATES / "Qwen-QwQ-32B.jinja",
    "tiny-mistral": TEMPLATES / "mistralai-Mistral-Nemo-Instruct-2407.jinja",
}
CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather.", "parameters": CITY}}]
# A bounded city, so a random model's forced call closes within max_tokens.
SHORT_CITY = {**CITY, "properties": {"city": {"type": "string", "maxLength": 12}}}
SHORT = [{"type": "function", "function": {**TOOLS[0]["function"], "parameters": SHORT_CITY}}]


@pytest.fixture(scope="module")
def templated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningBridge]:
    # QwQ's template as published opens <think> whatever the request says; llama.cpp's copy closes it again
    # when thinking is off (the line removed here).
    official = tmp_path_factory.mktemp("templates") / "QwQ-32B-official.jinja"
    closing = "    {%- if not enable_thinking -%}{{- '</think>' -}}{%- endif -%}\n"
    text = SERVED["tiny-qwq"].read_text()
    assert closing in text
    official.write_text(text.replace(closing, ""))
    served = {**SERVED, "tiny-qwq-official": official}
    specs = [ModelSpec(name, TINY_CHAT, settings=TEST_SETTINGS, chat_template=path) for name, path in served.items()]
    specs.append(
        ModelSpec("tiny-gemma2-no-tools", TINY_CHAT, settings=TEST_SETTINGS, chat_template=SERVED["tiny-gemma2"],
                  tool_parser="none")
    )  # fmt: skip
    with served_with_bridge(specs) as running:
        yield running


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
    assert listed["tiny-mistral"]["tool_parser_evidence"].startswith("the template writes a past call as mistral")
    # Gemma 2's template shows no tool format: the generic one, and the listing says why.
    assert listed["tiny-gemma2"]["tool_parser"] == "generic"
    assert "shows no tool-call format" in listed["tiny-gemma2"]["tool_parser_evidence"]
    # Which engine renders each template, and why (the load-time probes): minja renders these three as written.
    assert {listed[name]["chat_template_engine"] for name in SERVED} == {"minja"}
    assert all(listed[name]["chat_template_engine_reason"] for name in SERVED)
    one = http_request(templated.port, "GET", "/v3/models/tiny-mistral").json()
    assert one == listed["tiny-mistral"]


def test_a_template_that_shows_no_format_is_forced_in_the_generic_one(templated: RunningBridge) -> None:
    """Gemma 2's template shows no tool-call markup: a forced call is written in the generic JSON format under
    a grammar and read back as a call, unary (streamed: tests/service/api/test_generic_tools.py)."""
    asked = [{"role": "user", "content": "Weather in Paris?"}]
    for choice in ("required", {"type": "function", "function": {"name": "get_weather"}}):
        reply = chat(templated, "tiny-gemma2", asked, tools=SHORT, tool_choice=choice, parallel_tool_calls=False,
                     max_tokens=300)  # fmt: skip
        assert reply.status == 200, reply.body[:300]
        answer = reply.json()["choices"][0]
        assert answer["finish_reason"] == "tool_calls", answer
        calls = answer["message"]["tool_calls"]
        assert [call["function"]["name"] for call in calls] == ["get_weather"]
        assert all(isinstance(json.loads(call["function"]["arguments"])["city"], str) for call in calls)
    assert chat(templated, "tiny-gemma2", asked, tools=TOOLS).status == 200  # "auto": it may answer


def test_a_forced_call_needs_a_format(templated: RunningBridge) -> None:
    """Served with --tool-parser none, a model writes no calls: forcing one is refused, naming the flag."""
    asked = [{"role": "user", "content": "Weather in Paris?"}]
    for choice in ("required", {"type": "function", "function": {"name": "get_weather"}}):
        reply = chat(templated, "tiny-gemma2-no-tools", asked, tools=TOOLS, tool_choice=choice)
        assert reply.status == 400, reply.body[:300]
        error = reply.json()["error"]
        assert error["param"] == "tool_choice" and "--tool-parser" in error["message"]


@pytest.mark.parametrize(("model", "effort"), [("tiny-qwq-official", {}), ("tiny-qwq", {"reasoning_effort": "high"})])
def test_a_forced_call_follows_the_reasoning_the_prompt_opened(
    templated: RunningBridge, model: str, effort: dict[str, str]
) -> None:
    """QwQ's template ends the prompt with ``<think>``: the call comes after the block closes, not inside it."""
    asked = [{"role": "user", "content": "What is the weather like in Paris?"}]
    body = {"tools": TOOLS, "tool_choice": "required", "max_tokens": 400, **effort}
    reply = chat(templated, model, asked, **body)
    assert reply.status == 200, reply.body[:300]
    choice = reply.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls", choice
    assert [call["function"]["name"] for call in choice["message"]["tool_calls"]] == ["get_weather"]
    thought = choice["message"].get("reasoning_content") or ""
    assert "<tool_call>" not in thought and "<think>" not in thought
    streamed = http_request(templated.port, "POST", "/v3/chat/completions",
                            {"model": model, "messages": asked, "temperature": 0, "stream": True, **body})  # fmt: skip
    chunks = [json.loads(event) for event in streamed.events() if event != "[DONE]"]
    names = [call["function"]["name"] for chunk in chunks for delta in [chunk["choices"][0]["delta"]]
             for call in delta.get("tool_calls") or [] if call.get("function", {}).get("name")]  # fmt: skip
    reasoning = "".join(chunk["choices"][0]["delta"].get("reasoning_content") or "" for chunk in chunks)
    assert names == ["get_weather"] and reasoning == (choice["message"].get("reasoning_content") or "")
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
