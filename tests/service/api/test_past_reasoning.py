"""A past reply whose content still holds its reasoning block reaches the template with the block apart
(ovserve.service.api.prompting.reasoning_apart), so each template does with past reasoning what it does.

Clients that keep the model's ``<think>...</think>`` in the content send it back so (chat UIs that show it inline).
DeepSeek V3.1's template cuts it off with ``content.split('</think>', 1)``, which minja cannot run: every such
history was refused (HTTP 400). Qwen3's cuts it off itself and renders ``reasoning_content`` after the last question.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import openvino_genai as ov_genai
import pytest

from ovserve.service.api.prompting import reasoning_apart, render_for_model
from ovserve.service.engine.chat_template import ChatTemplate, TemplateRenderer, minja_render
from ovserve.service.engine.template_probe import MINJA
from ovserve.service.parsing import OutputFormat
from ovserve.service.parsing.markup import THINK
from tests.conftest import TINY_CHAT

TEMPLATES = Path(__file__).resolve().parents[2] / "data" / "chat_templates"
PLAN, ANSWER = "Paris is in France; look it up.", "It is sunny in Paris."


def history(content: str, **reply: Any) -> list[dict[str, Any]]:
    """A question, a past reply of ``content``, and the next question."""
    return [{"role": "user", "content": "Weather in Paris?"}, {"role": "assistant", "content": content, **reply},
            {"role": "user", "content": "And tomorrow?"}]  # fmt: skip


@pytest.mark.parametrize(
    ("content", "reasoning", "reply"),
    [
        (f"<think>\n{PLAN}\n</think>\n\n{ANSWER}", PLAN, ANSWER),
        (f"{PLAN}</think>{ANSWER}", PLAN, ANSWER),  # the prompt opened the block (DeepSeek-R1, QwQ)
        (f"<think>{PLAN}</think>", PLAN, ""),
        (f"<think>{PLAN}</think>{ANSWER}</think>", PLAN, f"{ANSWER}</think>"),  # the first end ends the block
    ],
)
def test_the_block_goes_to_reasoning_content(content: str, reasoning: str, reply: str) -> None:
    message = {"role": "assistant", "content": content}
    assert reasoning_apart(THINK, message) == {"role": "assistant", "content": reply, "reasoning_content": reasoning}


@pytest.mark.parametrize(
    "message",
    [
        {"role": "assistant", "content": ANSWER},  # no block
        {"role": "assistant", "content": f"<think>{PLAN}"},  # no end: the text is the client's, left whole
        {"role": "assistant", "content": f"<think>x</think>{ANSWER}", "reasoning_content": PLAN},  # its own
        {"role": "user", "content": f"<think>{PLAN}</think>{ANSWER}"},  # a user may quote markup
        {"role": "assistant", "content": [{"type": "text", "text": f"<think>{PLAN}</think>"}]},
        {"role": "assistant", "content": None, "tool_calls": []},
    ],
)
def test_other_messages_stay_as_sent(message: dict[str, Any]) -> None:
    assert reasoning_apart(THINK, message) is message
    assert reasoning_apart(None, {"role": "assistant", "content": f"<think>{PLAN}</think>"})["content"].startswith(
        "<think>"
    )  # a model without a reasoning format: nothing to tell apart


@pytest.fixture(scope="module")
def tokenizer() -> ov_genai.Tokenizer:
    return ov_genai.Tokenizer(str(TINY_CHAT))


def model_of(tokenizer: ov_genai.Tokenizer, name: str, tool_parser: str, reasoning_parser: str) -> Any:
    renderer = TemplateRenderer(tokenizer, ChatTemplate((TEMPLATES / name).read_text(), name))
    engine = SimpleNamespace(render_chat=renderer.render, message_form=renderer.message_form, renderer=renderer)
    return SimpleNamespace(engine=engine, output_format=OutputFormat(tool_parser, reasoning_parser))


def test_deepseek_v3_1_renders_a_history_holding_a_block_with_minja(tokenizer: ov_genai.Tokenizer) -> None:
    name = "deepseek-ai-DeepSeek-V3.1.jinja"
    text = (TEMPLATES / name).read_text()
    with pytest.raises(RuntimeError, match="split"):  # the template's own cut, run by minja: what was refused
        minja_render(tokenizer, text, history(f"<think>{PLAN}</think>{ANSWER}"), None, {}, True)
    model = model_of(tokenizer, name, "deepseek_v31", "deepseek_r1")
    assert model.engine.renderer.engine == MINJA  # kept: minja renders its tools
    prompt = render_for_model(model, history(f"<think>{PLAN}</think>{ANSWER}"), None, {}, field="messages")
    assert f"<think></think>{ANSWER}" in prompt and PLAN not in prompt
    plain = render_for_model(model, history(ANSWER), None, {}, field="messages")
    assert prompt == plain  # the block cut off as the template cuts it


def test_qwen3_renders_the_block_as_it_renders_reasoning_content(tokenizer: ov_genai.Tokenizer) -> None:
    model = model_of(tokenizer, "Qwen-Qwen3-0.6B.jinja", "hermes", "qwen3")
    inline = history(f"<think>\n{PLAN}\n</think>\n\n{ANSWER}")
    apart = history(ANSWER, reasoning_content=PLAN)
    assert render_for_model(model, inline[:2], None, {}, field="messages") == render_for_model(
        model, apart[:2], None, {}, field="messages"
    )
    assert PLAN in render_for_model(model, inline[:2], None, {}, field="messages")  # after the last question: kept
