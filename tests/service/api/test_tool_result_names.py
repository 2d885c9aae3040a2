"""A tool result reaches the template named for the function of the call it answers
(ovserve.service.api.prompting.template_messages).

OpenAI's API gives a tool message only the call's id; templates that write a result under its function's name
read ``name`` (vLLM's Hermes template refuses a tool message without one, so an OpenAI-style history could not be
rendered at all). A client's own name stays; a result whose call is not in the history gets none.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import openvino_genai as ov_genai
import pytest

from ovserve.service.api.prompting import render_for_model, template_messages
from ovserve.service.engine.chat_template import ChatTemplate, TemplateRenderer
from ovserve.service.parsing import OutputFormat
from tests.conftest import TINY_CHAT

TEMPLATES = Path(__file__).resolve().parents[2] / "data" / "chat_templates"


def history(*results: dict[str, Any]) -> list[dict[str, Any]]:
    """A question, a turn calling get_weather and get_time, and ``results``."""
    calls = [
        {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
        {"id": "call_b", "type": "function", "function": {"name": "get_time", "arguments": {"zone": "CET"}}},
    ]
    return [{"role": "user", "content": "Weather and time?"}, {"role": "assistant", "content": None,
            "tool_calls": calls}, *results]  # fmt: skip


@pytest.fixture(scope="module")
def renderer() -> TemplateRenderer:
    text = (TEMPLATES / "vllm-hermes.jinja").read_text()
    return TemplateRenderer(ov_genai.Tokenizer(str(TINY_CHAT)), ChatTemplate(text, "vllm-hermes.jinja"))


def model_of(renderer: TemplateRenderer) -> Any:
    engine = SimpleNamespace(render_chat=renderer.render, message_form=renderer.message_form)
    return SimpleNamespace(engine=engine, output_format=OutputFormat("hermes"))


def test_each_result_is_named_for_its_call(renderer: TemplateRenderer) -> None:
    results = [{"role": "tool", "tool_call_id": "call_b", "content": "12:00"},
               {"role": "tool", "tool_call_id": "call_a", "content": "Sunny"}]  # fmt: skip
    messages = template_messages(model_of(renderer), history(*results))
    assert [message.get("name") for message in messages[2:]] == ["get_time", "get_weather"]
    prompt = render_for_model(model_of(renderer), history(*results), None, {}, field="messages")
    assert '{"name": "get_time", "content": "12:00"}' in prompt
    assert '{"name": "get_weather", "content": "Sunny"}' in prompt


def test_a_clients_own_name_stays_and_an_unknown_call_gets_none(renderer: TemplateRenderer) -> None:
    results = [{"role": "tool", "tool_call_id": "call_a", "content": "Sunny", "name": "weather_service"},
               {"role": "tool", "tool_call_id": "call_zzz", "content": "?"}]  # fmt: skip
    messages = template_messages(model_of(renderer), history(*results))
    assert messages[2]["name"] == "weather_service"
    assert "name" not in messages[3]


def test_the_clients_messages_are_not_changed(renderer: TemplateRenderer) -> None:
    sent = history({"role": "tool", "tool_call_id": "call_a", "content": "Sunny"})
    template_messages(model_of(renderer), sent)
    assert "name" not in sent[2]


def test_a_call_without_a_name_names_nothing(renderer: TemplateRenderer) -> None:
    sent = history({"role": "tool", "tool_call_id": "call_c", "content": "1"})
    sent[1]["tool_calls"].append({"id": "call_c", "type": "function", "function": {"arguments": "{}"}})
    assert "name" not in template_messages(model_of(renderer), sent)[2]
