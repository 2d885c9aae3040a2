"""Where a model's chat template comes from, how it renders, and how its refusals read.

Runs on copies of the bundled tiny-chat with the template files a user would put beside it, and on
published templates (tests/data/chat_templates) that openvino_genai's minja cannot parse or that refuse
a conversation.
"""

from __future__ import annotations

import argparse
import json
import shutil
from dataclasses import replace
from pathlib import Path

import openvino_genai as ov_genai
import pytest

from ovserve.service.config import ConfigError, ServeConfig, add_arguments, from_arguments
from ovserve.service.engine.chat_template import (
    MAX_ERROR_CHARS,
    ChatTemplate,
    TemplateError,
    TemplateRenderer,
    error_message,
    find_chat_template,
    jinja_render,
    minja_render,
    special_tokens,
)
from tests.conftest import TINY_CHAT

TEMPLATES = Path(__file__).resolve().parents[1] / "data" / "chat_templates"
MARKED = "{{ 'from-' + source }}{% for m in messages %}{{ m['content'] }}{% endfor %}"


@pytest.fixture(scope="module")
def tokenizer() -> ov_genai.Tokenizer:
    return ov_genai.Tokenizer(str(TINY_CHAT))


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    """tiny-chat's tokenizer files without its chat_template.jinja (only the rt_info one is left)."""
    copy = tmp_path / "model"
    shutil.copytree(TINY_CHAT, copy)
    (copy / "chat_template.jinja").unlink()
    config = json.loads((copy / "tokenizer_config.json").read_text())
    config.pop("chat_template", None)
    (copy / "tokenizer_config.json").write_text(json.dumps(config))
    return copy


def render(tokenizer: ov_genai.Tokenizer, template: ChatTemplate, tools: bool = False) -> str:
    tool = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    return TemplateRenderer(tokenizer, template).render([{"role": "user", "content": "x"}], tool if tools else None, {})


def test_the_embedded_template_is_the_last_resort(model_dir: Path, tokenizer: ov_genai.Tokenizer) -> None:
    template = find_chat_template(model_dir, tokenizer)
    assert template.source == "openvino_tokenizer.xml"
    assert template.default == (TINY_CHAT / "chat_template.jinja").read_text()


def test_files_beside_the_model_win_in_transformers_order(model_dir: Path, tokenizer: ov_genai.Tokenizer) -> None:
    config = json.loads((model_dir / "tokenizer_config.json").read_text())
    config["chat_template"] = MARKED.replace("source", "'config'")
    (model_dir / "tokenizer_config.json").write_text(json.dumps(config))
    found = find_chat_template(model_dir, tokenizer)
    assert (found.source, render(tokenizer, found)) == ("tokenizer_config.json", "from-configx")

    (model_dir / "chat_template.jinja").write_text(MARKED.replace("source", "'file'"))
    found = find_chat_template(model_dir, tokenizer)
    assert (found.source, render(tokenizer, found)) == ("chat_template.jinja", "from-filex")

    override = model_dir.parent / "mine.jinja"
    override.write_text(MARKED.replace("source", "'flag'"))
    found = find_chat_template(model_dir, tokenizer, override)
    assert (found.source, render(tokenizer, found)) == (f"--chat-template {override}", "from-flagx")


def test_named_templates_pick_tool_use_for_requests_with_tools(model_dir: Path, tokenizer: ov_genai.Tokenizer) -> None:
    config = json.loads((model_dir / "tokenizer_config.json").read_text())
    config["chat_template"] = [
        {"name": "default", "template": MARKED.replace("source", "'default'")},
        {"name": "tool_use", "template": MARKED.replace("source", "'tools'")},
    ]
    (model_dir / "tokenizer_config.json").write_text(json.dumps(config))
    found = find_chat_template(model_dir, tokenizer)
    assert render(tokenizer, found) == "from-defaultx"
    assert render(tokenizer, found, tools=True).startswith("from-tools")  # (minja adds a tool list it ignores)


def test_a_template_minja_cannot_parse_is_rendered_with_jinja2(tokenizer: ov_genai.Tokenizer) -> None:
    text = (TEMPLATES / "GLM-4.6.jinja").read_text()
    with pytest.raises(RuntimeError):  # what openvino_genai alone makes of it
        tokenizer.apply_chat_template([{"role": "user", "content": "x"}], True, chat_template=text)
    renderer = TemplateRenderer(tokenizer, ChatTemplate(text, "test"))
    assert renderer.engine == "jinja2"
    assert renderer.engine_reason.startswith("minja fails the plain probe (Expected comma in tuple")
    assert renderer.render([{"role": "user", "content": "Hi"}], None, {}).endswith("<|user|>\nHi<|assistant|>")


def test_a_refusal_is_the_templates_own_words_bounded(tokenizer: ov_genai.Tokenizer) -> None:
    renderer = TemplateRenderer(tokenizer, ChatTemplate((TEMPLATES / "google-gemma-2-2b-it.jinja").read_text(), "t"))
    with pytest.raises(TemplateError) as refused:
        renderer.render([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}], None, {})
    message = str(refused.value)
    assert message.startswith("Conversation roles must alternate user/assistant")
    assert "jenkins" not in message and "{%" not in message  # neither build paths nor the template source
    assert len(error_message(RuntimeError("x" * 10_000))) == MAX_ERROR_CHARS


def configure(*argv: object) -> ServeConfig:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return from_arguments(parser.parse_args([str(arg) for arg in argv]))


def test_chat_template_flag_and_toml(tmp_path: Path) -> None:
    template = tmp_path / "t.jinja"
    template.write_text(MARKED)
    flagged = configure("--model", f"m={TINY_CHAT}", "--chat-template", f"m={template}")
    assert flagged.models[0].chat_template == template
    toml = tmp_path / "serve.toml"
    toml.write_text(f'[[models]]\nname = "m"\npath = "{TINY_CHAT}"\nchat_template = "{template}"\n')
    assert configure("--config", toml).models[0].chat_template == template
    with pytest.raises(ConfigError, match="not a file"):
        configure("--model", f"m={TINY_CHAT}", "--chat-template", "m=/nope.jinja")
    with pytest.raises(ConfigError, match="no model named"):
        configure("--model", f"m={TINY_CHAT}", "--chat-template", f"x={template}")


def test_a_tool_use_template_minja_cannot_parse_is_rendered_with_jinja2(
    model_dir: Path, tokenizer: ov_genai.Tokenizer
) -> None:
    """The engine is chosen for both named templates: a request with tools must not meet a parse error."""
    config = json.loads((model_dir / "tokenizer_config.json").read_text())
    glm = (TEMPLATES / "GLM-4.6.jinja").read_text()
    plain = MARKED.replace("source", "'plain'")
    config["chat_template"] = [{"name": "default", "template": plain}, {"name": "tool_use", "template": glm}]
    (model_dir / "tokenizer_config.json").write_text(json.dumps(config))
    renderer = TemplateRenderer(tokenizer, find_chat_template(model_dir, tokenizer))
    assert renderer.engine == "jinja2"
    tool = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    assert renderer.render([{"role": "user", "content": "Hi"}], tool, {}).endswith("<|assistant|>")


GIGACHAT_20B = "llama-cpp-tests-GigaChat-20B-A3B-instruct.jinja"  # writes turns with additional_special_tokens[i]
# As tokenizer_config.json writes them: AddedToken objects or plain strings.
SEPARATORS = [{"content": "<|role_sep|>", "special": True}, "<|message_sep|>", "[", "]"]


def test_the_models_other_special_tokens_reach_the_template(model_dir: Path, tokenizer: ov_genai.Tokenizer) -> None:
    """transformers passes a template the tokenizer's special tokens map: GigaChat-20B's template refused every
    conversation here ('additional_special_tokens' is not defined); with tokenizer_config.json's tokens passed, both
    engines render it as the model's own tokens say."""
    config = json.loads((model_dir / "tokenizer_config.json").read_text())
    (model_dir / "tokenizer_config.json").write_text(json.dumps({**config, "additional_special_tokens": SEPARATORS,
                                                                 "unk_token": {"content": "<unk>"}}))  # fmt: skip
    shutil.copy(TEMPLATES / GIGACHAT_20B, model_dir / "chat_template.jinja")
    template = find_chat_template(model_dir, tokenizer)
    separators = ["<|role_sep|>", "<|message_sep|>", "[", "]"]
    assert template.variables == {"unk_token": "<unk>", "pad_token": config["pad_token"],
                                  "additional_special_tokens": separators}  # fmt: skip
    expected = "user<|role_sep|>Hi<|message_sep|>available functions<|role_sep|>[]<|message_sep|>assistant<|role_sep|>"
    hello = [{"role": "user", "content": "Hi"}]
    assert TemplateRenderer(tokenizer, template).render(hello, None, {}).endswith(expected)
    job = (template.default, hello, None, template.variables, True)
    assert minja_render(tokenizer, *job).endswith(expected)
    assert jinja_render(special_tokens(tokenizer), *job).endswith(expected)
    with pytest.raises(TemplateError, match="additional_special_tokens"):
        TemplateRenderer(tokenizer, replace(template, variables={})).render(hello, None, {})


def test_a_tokenizer_config_that_is_not_json_gives_no_variables(model_dir: Path, tokenizer: ov_genai.Tokenizer) -> None:
    (model_dir / "tokenizer_config.json").write_text("{not json")
    shutil.copy(TEMPLATES / GIGACHAT_20B, model_dir / "chat_template.jinja")
    assert find_chat_template(model_dir, tokenizer).variables == {}
