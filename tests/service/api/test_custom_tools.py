"""A request's tools reach the template under Meta's other name for them, ``custom_tools``, too
(ovserve.service.api.prompting.render_for_model).

vLLM's Llama 4 pythonic template lists the tools only from ``custom_tools``: given only ``tools`` its prompt names
none of them, and the model is asked to call functions it never sees. Meta's own templates read ``custom_tools``
only to take it as ``tools``, so their prompts do not change; a client's own ``custom_tools`` still wins.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import openvino_genai as ov_genai
import pytest

from ovserve.service.api.prompting import render_for_model
from ovserve.service.engine.chat_template import ChatTemplate, TemplateRenderer
from ovserve.service.parsing import OutputFormat
from tests.conftest import TINY_CHAT

TEMPLATES = Path(__file__).resolve().parents[2] / "data" / "chat_templates"
ASK = [{"role": "user", "content": "What is the weather like in Paris?"}]


def tool(name: str, parameter: str) -> dict[str, Any]:
    parameters = {"type": "object", "properties": {parameter: {"type": "string"}}, "required": [parameter]}
    return {"type": "function", "function": {"name": name, "description": "A tool.", "parameters": parameters}}


TOOLS = [tool("get_weather", "city"), tool("set_alarm", "hour")]


@pytest.fixture(scope="module")
def tokenizer() -> ov_genai.Tokenizer:
    return ov_genai.Tokenizer(str(TINY_CHAT))


def served(tokenizer: ov_genai.Tokenizer, template: str, tool_parser: str) -> tuple[Any, TemplateRenderer]:
    """A stand-in for a served model: the template's renderer as its engine, the template's tool format."""
    renderer = TemplateRenderer(tokenizer, ChatTemplate((TEMPLATES / template).read_text(), template))
    engine = SimpleNamespace(render_chat=renderer.render, message_form=renderer.message_form)
    return SimpleNamespace(engine=engine, output_format=OutputFormat(tool_parser)), renderer


def test_a_template_that_reads_only_custom_tools_lists_the_tools(tokenizer: ov_genai.Tokenizer) -> None:
    model, renderer = served(tokenizer, "vllm-llama4-pythonic.jinja", "pythonic")
    assert "set_alarm" not in renderer.render(ASK, TOOLS, {})  # what the template writes from ``tools`` alone
    prompt = render_for_model(model, ASK, TOOLS, {}, field="messages")
    assert all(word in prompt for word in ("get_weather", "set_alarm", "hour"))


def test_a_clients_own_custom_tools_win(tokenizer: ov_genai.Tokenizer) -> None:
    model, _ = served(tokenizer, "vllm-llama4-pythonic.jinja", "pythonic")
    prompt = render_for_model(model, ASK, TOOLS, {"custom_tools": [tool("get_time", "zone")]}, field="messages")
    assert "get_time" in prompt and "set_alarm" not in prompt


@pytest.mark.parametrize(
    "template", ["meta-llama-Llama-3.1-8B-Instruct.jinja", "meta-llama-Llama-3.2-3B-Instruct.jinja"]
)
def test_meta_templates_render_as_before(tokenizer: ov_genai.Tokenizer, template: str) -> None:
    model, renderer = served(tokenizer, template, "llama3_json")
    context = {"date_string": "26 Jul 2024"}  # the prompts name today's date otherwise
    assert render_for_model(model, ASK, TOOLS, context, field="messages") == renderer.render(ASK, TOOLS, context)


def test_no_tools_no_custom_tools(tokenizer: ov_genai.Tokenizer) -> None:
    model, renderer = served(tokenizer, "vllm-llama4-pythonic.jinja", "pythonic")
    assert render_for_model(model, ASK, [], {}, field="messages") == renderer.render(ASK, None, {})
