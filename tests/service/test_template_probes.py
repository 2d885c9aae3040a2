# ruff: noqa: RUF001 (DeepSeek's markup is written with fullwidth bars)
"""The load-time probes of a chat template: which engine renders it and the message form it wants.

Published templates (tests/data/chat_templates, SOURCES.md) rendered with tiny-chat's tokenizer: one that writes
a call only for ``content: null`` (DeepSeek-R1-Distill), ones that fail on null content (QwQ, Devstral), ones minja
cannot render with tools (``tojson(ensure_ascii=False)``: MiniCPM5, MiniMax-M2), one whose calls minja rewrites
in its own JSON (DeepSeek V3.2); a template that loops; and two of them served end to end by a real server.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import grpc
import openvino_genai as ov_genai
import pytest

from clients.v1 import chat_pb2, chat_pb2_grpc, tokenizer_pb2, tokenizer_pb2_grpc
from service.api.prompting import template_messages
from service.engine import chat_template
from service.engine.chat_template import ChatTemplate, TemplateError, TemplateRenderer, minja_render
from service.engine.template_probe import JINJA2, MINJA, TOOLS, MessageForm
from service.models import ModelSpec
from service.parsing import OutputFormat
from tests.conftest import TEST_SETTINGS, TINY_CHAT, ServerThread, start_server
from tests.rpc import parse

TEMPLATES = Path(__file__).resolve().parents[1] / "data" / "chat_templates"
R1_DISTILL = "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja"
ENSURE_ASCII = ["openbmb-MiniCPM5-1B.jinja", "MiniMax-M2.jinja"]
ARGUMENTS = {"city": "Lyon", "days": 2}
# A conversation as chat completions reads a client's: the call turn's content null, its arguments an object.
CALLED = [
    {"role": "user", "content": "Weather?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "abc123XYZ", "type": "function", "function": {"name": "get_weather", "arguments": ARGUMENTS}}
        ],
    },
    {"role": "tool", "tool_call_id": "abc123XYZ", "content": "Rain."},
]
R1_CALL = '<｜tool▁sep｜>get_weather\n```json\n{"city": "Lyon", "days": 2}\n```<｜tool▁call▁end｜>'


@pytest.fixture(scope="module")
def tokenizer() -> ov_genai.Tokenizer:
    return ov_genai.Tokenizer(str(TINY_CHAT))


def renderer_of(tokenizer: ov_genai.Tokenizer, name: str, model_dir: Path | None = None) -> TemplateRenderer:
    return TemplateRenderer(tokenizer, ChatTemplate((TEMPLATES / name).read_text(encoding="utf-8"), name), model_dir)


def prompt(renderer: TemplateRenderer, history: list[dict[str, Any]], form: MessageForm | None = None) -> str:
    """``history`` as the server renders it, its messages in ``form`` (default: the one the probes chose)."""
    model: Any = SimpleNamespace(engine=SimpleNamespace(message_form=form or renderer.message_form))
    model.output_format = OutputFormat()  # no tool parser: ids and calls as the client sends them
    return renderer.render(template_messages(model, history), TOOLS, {})


def test_a_template_that_writes_calls_only_for_null_content_keeps_them(tokenizer: ov_genai.Tokenizer) -> None:
    """DeepSeek-R1-Distill writes a call only ``if message['content'] is none`` and concatenates its arguments."""
    renderer = renderer_of(tokenizer, R1_DISTILL)
    assert renderer.message_form == MessageForm(null_call_content=True, text_arguments=True)
    assert R1_CALL in prompt(renderer, CALLED)
    # A client that sends "" beside its calls gets the same prompt.
    empty = [CALLED[0], {**CALLED[1], "content": ""}, CALLED[2]]
    assert prompt(renderer, empty) == prompt(renderer, CALLED)
    # What the server gave this template before the probes ("" for null): the call silently gone.
    assert "Lyon" not in prompt(renderer, CALLED, MessageForm())
    # Arguments left an object: minja writes a Python dict's text, which the model never writes.
    assert "{'city': 'Lyon', 'days': 2}" in prompt(renderer, CALLED, MessageForm(null_call_content=True))


@pytest.mark.parametrize("name", ["Qwen-QwQ-32B.jinja", "unsloth-mistral-Devstral-Small-2507.jinja"])
def test_a_template_that_fails_on_null_content_gets_an_empty_string(tokenizer: ov_genai.Tokenizer, name: str) -> None:
    renderer = renderer_of(tokenizer, name)
    assert renderer.message_form == MessageForm()
    assert '"city": "Lyon"' in prompt(renderer, CALLED)
    with pytest.raises(TemplateError, match="null"):  # QwQ splits the content, Devstral indexes it
        prompt(renderer, CALLED, MessageForm(null_call_content=True))


@pytest.mark.parametrize("name", ENSURE_ASCII)
@pytest.mark.parametrize("in_helper", [False, True], ids=["in-server", "in-helper"])
def test_templates_minja_cannot_render_with_tools_are_rendered_with_jinja2(
    tokenizer: ov_genai.Tokenizer, name: str, in_helper: bool
) -> None:
    text = (TEMPLATES / name).read_text(encoding="utf-8")
    minja_render(tokenizer, text, [{"role": "user", "content": "x"}], None, {}, True)  # minja renders a plain turn
    with pytest.raises(RuntimeError, match="Unknown argument ensure_ascii for function tojson"):
        minja_render(tokenizer, text, [{"role": "user", "content": "x"}], TOOLS, {}, True)
    renderer = renderer_of(tokenizer, name, TINY_CHAT if in_helper else None)
    try:
        assert renderer.engine == JINJA2
        assert "ensure_ascii" in renderer.engine_reason and "tools probe" in renderer.engine_reason
        rendered = prompt(renderer, CALLED)
        assert "Forecast for a city." in rendered and "Lyon" in rendered and "Rain." in rendered
    finally:
        renderer.close()


def test_a_family_call_minja_would_rewrite_is_rendered_with_jinja2(tokenizer: ov_genai.Tokenizer) -> None:
    """minja takes DeepSeek V3.2's template for one that cannot write calls and writes its own JSON of them
    (dropping the reasoning too); Jinja2 writes the family's DSML markup."""
    name = "deepseek-ai-DeepSeek-V3.2.jinja"
    text = (TEMPLATES / name).read_text(encoding="utf-8")
    as_minja = minja_render(tokenizer, text, [dict(m) for m in CALLED], TOOLS, {}, True)
    assert '"tool_calls"' in as_minja and "DSML｜invoke" not in as_minja.split("<｜User｜>")[-1]
    renderer = renderer_of(tokenizer, name)
    assert renderer.engine == JINJA2 and "rewrites" in renderer.engine_reason
    assert '<｜DSML｜invoke name="get_weather">' in prompt(renderer, CALLED).split("<｜User｜>")[-1]


@pytest.mark.parametrize("name", ["Qwen-Qwen3-0.6B.jinja", "meta-llama-Llama-3.1-8B-Instruct.jinja"])
def test_templates_minja_renders_as_jinja2_stay_with_minja(tokenizer: ov_genai.Tokenizer, name: str) -> None:
    renderer = renderer_of(tokenizer, name)
    assert (renderer.engine, renderer.engine_reason) == (
        MINJA,
        "minja renders the probes as Jinja2 does, whitespace aside",
    )
    assert renderer.message_form == MessageForm()


def test_a_template_that_drops_calls_keeps_minjas_json_of_them(tokenizer: ov_genai.Tokenizer) -> None:
    """Phi-4-mini's template writes no call: minja's JSON of it (llama.cpp's generic form) loses less."""
    renderer = renderer_of(tokenizer, "microsoft-Phi-4-mini-instruct.jinja")
    assert renderer.engine == MINJA
    assert '{"city":"Lyon","days":2}' in "".join(prompt(renderer, CALLED).split())


def test_the_message_form_leaves_other_messages_as_they_are() -> None:
    form = MessageForm(null_call_content=True, text_arguments=True)
    assert form.apply({"role": "assistant", "content": None}) == {"role": "assistant", "content": ""}
    call = {"role": "assistant", "content": "Sure.", "tool_calls": CALLED[1]["tool_calls"]}
    applied = form.apply(call)
    assert applied["content"] == "Sure." and applied["tool_calls"][0]["function"]["arguments"] == json.dumps(ARGUMENTS)
    assert call["tool_calls"][0]["function"]["arguments"] == ARGUMENTS  # the client's message is not changed


LOOPING = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}{{ messages[0]['content'] }}"


def test_a_template_that_loops_is_bounded(tokenizer: ov_genai.Tokenizer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The probes run in the helper process and are given up past PROBE_TIMEOUT_S; the template is then rendered
    only there, each render refused past RENDER_TIMEOUT_S (the server's threads never run it)."""
    monkeypatch.setattr(chat_template, "PROBE_TIMEOUT_S", 1.0)
    monkeypatch.setattr(chat_template, "RENDER_TIMEOUT_S", 1.0)
    renderer = TemplateRenderer(tokenizer, ChatTemplate(LOOPING, "looping"), TINY_CHAT)
    try:
        assert renderer.engine == MINJA and renderer.engine_reason.startswith("the probes did not finish")
        with pytest.raises(TemplateError, match="longer than 1 s"):
            renderer.render([{"role": "user", "content": "Hi"}], None, {})
    finally:
        renderer.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    """tiny-chat copies whose chat_template.jinja is DeepSeek-R1-Distill's and MiniCPM5's, on a real server."""
    specs = []
    for name, template in (("r1-distill", R1_DISTILL), ("minicpm5", ENSURE_ASCII[0])):
        copy = tmp_path_factory.mktemp(name) / "model"
        shutil.copytree(TINY_CHAT, copy)
        shutil.copy(TEMPLATES / template, copy / "chat_template.jinja")
        specs.append(ModelSpec(name, copy, settings=TEST_SETTINGS))
    running = start_server(specs)
    yield running
    running.stop()


def client_history() -> list[dict[str, Any]]:
    """CALLED as a client sends it (arguments a JSON string, content null)."""
    call = {**CALLED[1]["tool_calls"][0], "function": {"name": "get_weather", "arguments": json.dumps(ARGUMENTS)}}
    return [CALLED[0], {"role": "assistant", "tool_calls": [call]}, CALLED[2]]


def test_served_deepseek_r1_distill_shows_the_model_its_call(served: ServerThread) -> None:
    with grpc.insecure_channel(served.target) as channel:
        tokenizer = tokenizer_pb2_grpc.TokenizerServiceStub(channel)
        request = {"model": "r1-distill", "messages": client_history()}
        ids = tokenizer.Tokenize(parse(tokenizer_pb2.TokenizeRequest, request)).tokens
        text = tokenizer.Detokenize(tokenizer_pb2.DetokenizeRequest(model="r1-distill", tokens=ids)).prompt
    assert R1_CALL in text and text.endswith("<｜tool▁outputs▁end｜>")


def test_served_minicpm5_answers_a_request_with_tools(served: ServerThread) -> None:
    body = {
        "model": "minicpm5",
        "messages": client_history(),
        "tools": [{"type": "function", "function": TOOLS[0]["function"]}],
        "max_tokens": 4,
    }
    with grpc.insecure_channel(served.target) as channel:
        reply = chat_pb2_grpc.ChatServiceStub(channel).CreateChatCompletion(
            parse(chat_pb2.CreateChatCompletionRequest, body)
        )
    assert reply.choices[0].finish_reason and reply.usage.prompt_tokens > 0
