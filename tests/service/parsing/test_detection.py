"""Format detection (service/parsing/detection.py): each published template's tool and reasoning formats, found by
rendering a known call and a known thought through the template with the server's own renderer.

The table is what each family's model really writes (its published template, its peers' parsers): a change to
detection that picks another format for one of them fails here, naming the template.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openvino_genai as ov_genai
import pytest

from ovserve.service.engine.chat_template import ChatTemplate, TemplateRenderer
from ovserve.service.parsing import OutputFormat, detection
from ovserve.service.parsing.formats import GENERIC, REASONING_PARSERS, _writings
from tests.conftest import TINY_CHAT

TEMPLATES = Path(__file__).resolve().parents[2] / "data" / "chat_templates"
SCHEMAS = {detection.PROBE_NAME: detection.PROBE_TOOLS[0]["function"]["parameters"]}
# template -> (tool format, what showed it: "render" a past call written in it, "prompt" the prompt rendered with
# tools names its markup, "source" only the template's source does, "none" nothing: the generic format;
# reasoning format or None).
EXPECTED = {
    "Apertus-8B-Instruct.jinja": ("apertus", "render", "apertus"),
    "Apriel-1.6-15b-Thinker-fixed.jinja": ("apriel", "render", "apriel"),
    "Bielik-11B-v3.0-Instruct.jinja": ("hermes", "render", "think"),
    "ByteDance-Seed-OSS.jinja": ("seed_oss", "render", "seed_oss"),
    "Cohere2MoE.jinja": ("command_r7b", "render", "command_r7b"),
    "CohereForAI-c4ai-command-r-plus-tool_use.jinja": ("command_r_plus", "render", None),
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja": ("command_r7b", "render", "command_r7b"),
    "GLM-4.6.jinja": ("glm45", "render", "think"),
    "GLM-4.7-Flash.jinja": ("glm45", "render", "think"),
    "GigaChat3-10B-A1.8B.jinja": ("gigachat3", "render", None),
    "GigaChat3.1-10B-A1.8B.jinja": ("gigachat3_1", "render", None),
    "HuggingFaceTB-SmolLM3-3B.jinja": ("generic", "none", "think"),
    "Kimi-K2-Instruct.jinja": ("kimi_k2", "render", None),
    "Kimi-K2-Thinking.jinja": ("kimi_k2", "render", "think"),
    "Kimi-K3.jinja": ("kimi_k3", "render", "kimi_k3"),
    "LFM2-8B-A1B.jinja": ("lfm2", "prompt", None),
    "LFM2.5-8B-A1B.jinja": ("lfm2", "render", "think"),
    "LFM2.5-Instruct.jinja": ("lfm2", "prompt", "think"),  # cuts <think> from replies before the last
    "MiMo-VL.jinja": ("hermes", "render", None),
    "MiniMax-M1.jinja": ("minimax", "render", "think"),
    "MiniMax-M2.jinja": ("minimax_m2", "render", "think"),
    "MiniMax-M3.jinja": ("minimax_m3", "render", "minimax_m3"),
    "Mistral-Small-3.2-24B-Instruct-2506.jinja": ("mistral_args", "render", None),
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja": ("qwen3_coder", "render", "think"),
    "NVIDIA-Nemotron-Nano-v2.jinja": ("nemotron_json", "render", "think"),
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja": ("hermes", "render", None),
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja": ("hermes", "render", None),
    "Qwen-QwQ-32B.jinja": ("hermes", "render", "think"),
    "Qwen-Qwen2.5-7B-Instruct.jinja": ("hermes", "render", None),
    "Qwen-Qwen3-0.6B.jinja": ("hermes", "render", "think"),
    "Qwen3-Coder.jinja": ("qwen3_coder", "render", None),
    "Qwen3.5-4B.jinja": ("qwen3_coder", "render", "think"),
    "Reka-Edge.jinja": ("hermes", "render", "think"),
    "Spark2.5.jinja": ("glm45", "render", "think"),
    "StepFun3.5-Flash.jinja": ("qwen3_coder", "render", "think"),
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja": ("deepseek_v3", "render", "think"),
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja": ("deepseek_v3", "render", "think"),
    "deepseek-ai-DeepSeek-V3.1.jinja": ("deepseek_v31", "render", "think"),
    "deepseek-ai-DeepSeek-V3.2.jinja": ("deepseek_v32", "render", "think"),
    "deepseek-ai-DeepSeek-V4-Flash-0731.jinja": ("deepseek_v4", "render", "think"),
    "deepseek-ai-DeepSeek-V4.jinja": ("deepseek_v4", "render", "think"),
    "fireworks-ai-llama-3-firefunction-v2.jinja": ("phi4_mini_json", "render", None),
    "genai-openbmb-MiniCPM3-4B.jinja": ("lfm2", "prompt", "minicpm3"),
    "genai-tiiuae-Falcon3-3B-Instruct.jinja": ("hermes", "prompt", None),
    # GLM-4-9B-chat writes a past call from the message's metadata, not tool_calls: its tool prompt shows glm4
    "genai-THUDM-glm-4-9b-chat.jinja": ("glm4", "source", None),
    "google-gemma-2-2b-it.jinja": ("generic", "none", None),
    "google-gemma-3-270m-it.jinja": ("generic", "none", None),
    "google-gemma-4-31B-it-interleaved.jinja": ("gemma4", "render", "gemma4"),
    "google-gemma-4-31B-it.jinja": ("gemma4", "render", "gemma4"),
    "ibm-granite-granite-3.3-2B-Instruct.jinja": ("granite", "prompt", "granite_think"),
    "ibm-granite-granite-4.0.jinja": ("hermes", "render", None),
    "ibm-granite-granite-4.1.jinja": ("hermes", "render", None),
    "inclusionai-ling-3.0-flash.jinja": ("glm45", "render", "think"),
    "llama-cpp-deepseek-r1.jinja": ("deepseek_v3", "render", "think"),
    "llama-cpp-microsoft-Phi-4-mini-instruct.jinja": ("granite", "render", None),  # <|tool_call|>{...}<|/tool_call|>
    "llama-cpp-rwkv-world.jinja": ("generic", "none", "think"),
    "meetkai-functionary-medium-v3.1.jinja": ("functionary_v3_1", "render", None),
    "meetkai-functionary-medium-v3.2.jinja": ("functionary_v3_2", "render", None),
    "meta-llama-Llama-3.1-8B-Instruct.jinja": ("llama3_json", "render", None),
    "meta-llama-Llama-3.2-3B-Instruct.jinja": ("llama3_json", "render", None),
    "meta-llama-Llama-3.3-70B-Instruct.jinja": ("llama3_json", "render", None),
    "microsoft-Phi-3.5-mini-instruct.jinja": ("generic", "none", None),
    "microsoft-Phi-4-mini-instruct.jinja": ("phi4_mini_json", "source", None),
    "mistralai-Ministral-3-14B-Reasoning-2512.jinja": ("mistral_args", "render", "mistral"),
    "mistralai-Mistral-7B-Instruct-v0.3.jinja": ("mistral", "render", None),
    "mistralai-Mistral-Nemo-Instruct-2407.jinja": ("mistral", "render", None),
    "moonshotai-Kimi-K2.jinja": ("kimi_k2", "render", None),
    "muse-glimmer.jinja": ("onyx", "render", "onyx"),
    "openai-gpt-oss-120b.jinja": ("openai", "render", "openai"),
    "openbmb-MiniCPM5-1B.jinja": ("minicpm5xml", "render", "think"),
    "ollama-exaone-deep.jinja": ("generic", "none", "exaone_deep"),  # cuts a past reply's <thought> block out
    "ollama-marco-o1.jinja": ("generic", "none", "marco_o1"),
    # DeepSeek-R1's first template renders no reasoning_content: it cuts a past reply's <think> block out
    "ollama-deepseek-r1-8b.jinja": ("deepseek_v3", "render", "think"),
    "ollama-llama4.jinja": ("llama3_json", "render", None),  # <|python_start|><|python_end|>{"name": ...}
    "ovms-chat_template_gpt_oss.jinja": ("openai", "render", "openai"),
    "ovms-chat_template_onyx.jinja": ("onyx", "render", "onyx"),
    "ovms-chat_template_phi4_mini.jinja": ("phi4_mini_json", "prompt", None),
    "ovms-chat_template_qwen36.jinja": ("qwen3_coder", "render", "think"),
    "ovms-chat_template_qwen3coder_next.jinja": ("qwen3_coder", "render", None),
    "poolside-Laguna-S-2.1.jinja": ("glm45", "render", "think"),
    "poolside-Laguna-XS-2.1.jinja": ("glm45", "render", "think"),
    "poolside-Laguna-XS.2.jinja": ("glm45", "render", "think"),
    "tencent-Hy3.jinja": ("hy_v3", "render", "hy_v3"),
    "unsloth-Apriel-1.5.jinja": ("apriel", "render", "apriel"),
    "unsloth-mistral-Devstral-Small-2507.jinja": ("mistral_args", "render", None),
    "upstage-Solar-Open-100B.jinja": ("solar_open", "render", "solar_open"),
    "vllm-granite-20b-fc.jinja": ("granite_20b_fc", "render", None),
    "vllm-hunyuan-a13b.jinja": ("apriel", "render", "think"),
    "vllm-hermes.jinja": ("hermes", "prompt", None),  # its past calls put "arguments" before "name"
    "vllm-internlm2-tool.jinja": ("internlm", "render", None),
    "vllm-llama4-pythonic.jinja": ("pythonic", "prompt", None),
    "vllm-phi4-mini-tool_use.jinja": ("phi4_mini_json", "prompt", None),
    "vllm-xlam-llama.jinja": ("mistral", "render", None),
    "vllm-functiongemma.jinja": ("functiongemma", "source", None),  # its tools show only beside a system message
    "vllm-kimi-audio.jinja": ("generic", "none", None),  # it reads `conversations`: every prompt is empty
    # It needs the model's additional_special_tokens, which tiny-chat's tokenizer_config.json lacks: nothing renders.
    "llama-cpp-tests-GigaChat-20B-A3B-instruct.jinja": ("generic", "none", None),
    "ollama-cogito-14b.jinja": ("hermes", "render", "think"),  # thinking switched on by a system line, no markup
}


@pytest.fixture(scope="module")
def tokenizer() -> ov_genai.Tokenizer:
    return ov_genai.Tokenizer(str(TINY_CHAT))


def chosen(tokenizer: ov_genai.Tokenizer, text: str) -> OutputFormat:
    renderer = TemplateRenderer(tokenizer, ChatTemplate(text, "test"))
    return OutputFormat.choose(None, None, text, render=lambda history, tools, context: renderer.render(
        history, tools, context))  # fmt: skip


def test_every_vendored_template_is_in_the_table() -> None:
    assert sorted(path.name for path in TEMPLATES.glob("*.jinja")) == sorted(EXPECTED)


@pytest.mark.parametrize("template", sorted(EXPECTED))
def test_a_published_template_gets_its_family_formats(tokenizer: ov_genai.Tokenizer, template: str) -> None:
    tool, shown_by, reasoning = EXPECTED[template]
    found = chosen(tokenizer, (TEMPLATES / template).read_text())
    assert (found.tool_parser, found.reasoning_parser) == (tool, reasoning)
    prefixes = {"render": "the template writes a past call as", "prompt": "the prompt it writes with tools offered",
                "source": "the template mentions", "none": "the template shows no tool-call format"}  # fmt: skip
    assert found.tool_evidence.startswith(prefixes[shown_by]), found.tool_evidence


@pytest.mark.parametrize(
    ("template", "not_this"),
    [
        ("meetkai-functionary-medium-v3.1.jinja", "qwen3_coder"),  # its source says <function= too
        ("ByteDance-Seed-OSS.jinja", "qwen3_coder"),  # <seed:tool_call><function=...
        ("unsloth-Apriel-1.5.jinja", "hermes"),  # its instructions mention <tool_call>; it writes <tool_calls>[...]
    ],
)
def test_the_source_substrings_no_longer_decide(tokenizer: ov_genai.Tokenizer, template: str, not_this: str) -> None:
    """The issue's three misreadings: the substring table alone still picks the wrong format; rendering does not."""
    text = (TEMPLATES / template).read_text()
    assert OutputFormat.choose(None, None, text).tool_parser == not_this
    assert chosen(tokenizer, text).tool_parser not in (not_this, GENERIC)


@pytest.mark.parametrize(("name", "writing"), _writings(), ids=lambda value: value if isinstance(value, str) else "")
def test_every_format_reads_back_its_own_writing(name: str, writing: object) -> None:
    """What detection looks for in a template is what the format's parser reads: the probe call, whole."""
    text = writing if isinstance(writing, str) else detection.written_call(writing)  # type: ignore[arg-type]
    parser = OutputFormat(name).parser(tools=True, schemas=SCHEMAS)
    parser.feed(text)
    parser.finish()
    calls = [(call.name, json.loads(call.arguments)) for call in parser.result.calls]
    assert calls == [(detection.PROBE_NAME, detection.PROBE_ARGUMENTS)], (name, text)


def test_minja_polyfill_is_not_evidence() -> None:
    """minja writes a past call as a JSON object into a template it believes cannot render one: that shape
    holds Mistral's writing of the call, but shows nothing of the model's own format."""
    polyfill = json.dumps(
        {"tool_calls": [{"name": detection.PROBE_NAME, "arguments": detection.PROBE_ARGUMENTS, "id": "x"}]}, indent=2
    )
    rendered = f"<|user|>What is the weather in Paris?<|assistant|>{polyfill}<|user|>Sunny."
    found = OutputFormat.choose(None, None, "{{ messages }}", render=lambda history, tools, context: rendered)
    assert found.tool_parser == GENERIC
    assert detection.by_rendered_call(_writings(), [rendered.replace(', "id": "x"', "")]) is None


def test_a_template_that_cuts_reasoning_only_from_earlier_replies_shows_its_block(
    tokenizer: ov_genai.Tokenizer,
) -> None:
    """LFM2.5-Instruct's template keeps the last reply's <think> block and cuts those of earlier replies (unless
    keep_past_thinking): a probe whose reply is the last shows nothing; one with a later reply shows the block."""
    text = (TEMPLATES / "LFM2.5-Instruct.jinja").read_text()
    renderer = TemplateRenderer(tokenizer, ChatTemplate(text, "test"))
    reply = {"role": "assistant", "content": f"<think>{detection.PROBE_THOUGHT}</think>{detection.PROBE_ANSWER}"}
    last = renderer.render([detection.reasoning_history()[0], reply, detection.LATER_TURNS[0]], None, {})
    assert detection.PROBE_THOUGHT in last  # the reply is the last: its block kept
    found = chosen(tokenizer, text)
    assert found.reasoning_parser == "think"
    assert found.reasoning_evidence.startswith("the template cuts a past reply's reasoning out as think")


def test_a_template_that_cuts_past_reasoning_out_shows_its_block(tokenizer: ov_genai.Tokenizer) -> None:
    """DeepSeek-R1's first template drops reasoning_content and keeps only what follows a past reply's </think>:
    the block it cuts out is its model's, though no <think> appears in its source."""
    text = (TEMPLATES / "ollama-deepseek-r1-8b.jinja").read_text()
    assert "<think>" not in text
    found = chosen(tokenizer, text)
    assert found.reasoning_parser == "think"
    assert found.reasoning_evidence.startswith("the template cuts a past reply's reasoning out as think")


@pytest.mark.parametrize(
    ("template", "reasoning"),
    [("LFM2.5-8B-A1B.jinja", "think"), ("upstage-Solar-Open-100B.jinja", "solar_open")],
)
def test_a_template_that_reads_reasoning_under_its_own_name_shows_its_block(
    tokenizer: ov_genai.Tokenizer, template: str, reasoning: str
) -> None:
    """LFM2.5's template reads a past turn's reasoning as ``thinking``, Solar Open's as ``reasoning``: the probe
    passes it under every such name, so their writing of it is the evidence (before: a cut block, a mention)."""
    found = chosen(tokenizer, (TEMPLATES / template).read_text())
    assert found.reasoning_parser == reasoning
    assert found.reasoning_evidence.startswith(f"the template writes past reasoning as {reasoning} does")


@pytest.mark.parametrize(
    "template",
    [
        "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}",  # keeps the block: no evidence
        "{% for m in messages %}{% if m.role == 'user' %}{{ m.content }}{% endif %}{% endfor %}",  # drops replies
        "{{ raise_exception('no') }}",  # refuses every conversation
    ],
)
def test_a_template_that_cuts_nothing_shows_no_block(tokenizer: ov_genai.Tokenizer, template: str) -> None:
    renderer = TemplateRenderer(tokenizer, ChatTemplate(template, "test"))
    blocks = REASONING_PARSERS.items()
    assert detection.by_stripped_reasoning(blocks, lambda h, t, c: renderer.render(h, t, c)) is None


def test_a_template_that_renders_nothing_falls_back_to_its_source() -> None:
    def refuse(history: object, tools: object, context: object) -> str:
        raise ValueError("no")

    found = OutputFormat.choose(None, None, "<tool_call> {{ messages }}", render=refuse)
    assert (found.tool_parser, found.tool_evidence) == ("hermes", "the template mentions '<tool_call>'")


def test_configured_parsers_win_and_say_so(tokenizer: ov_genai.Tokenizer) -> None:
    text = (TEMPLATES / "Qwen-Qwen3-0.6B.jinja").read_text()
    renderer = TemplateRenderer(tokenizer, ChatTemplate(text, "test"))
    found = OutputFormat.choose("mistral", "none", text, render=lambda h, t, c: renderer.render(h, t, c))
    assert (found.tool_parser, found.reasoning_parser) == ("mistral", None)
    assert found.tool_evidence == "--tool-parser"


HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "What is the weather like in Paris?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
        {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Lyon"}'}},
    ]},
    {"role": "tool", "tool_call_id": "call_1", "content": "Sunny."},
    {"role": "tool", "tool_call_id": "call_2", "content": "Rainy."},
]  # fmt: skip


@pytest.mark.parametrize(
    ("template", "written"),
    [
        ("LFM2-8B-A1B.jinja", '<|tool_call_start|>[get_weather(city="Paris"), get_weather(city="Lyon")]'),
        ("ibm-granite-granite-3.3-2B-Instruct.jinja", '<|tool_call|>[{"name": "get_weather", "arguments": {"city"'),
        ("microsoft-Phi-4-mini-instruct.jinja", 'functools[{"name": "get_weather", "arguments": {"city": "Paris"}}'),
    ],
)
def test_a_template_that_drops_past_calls_sees_them_in_its_own_markup(
    tokenizer: ov_genai.Tokenizer, template: str, written: str
) -> None:
    """These templates show their format (in the prompt or the source) but render no tool_calls: a client's
    history would reach the model without its own calls. They are written into the turn's content instead."""
    from types import SimpleNamespace

    from ovserve.service.api.prompting import template_messages

    text = (TEMPLATES / template).read_text()
    renderer = TemplateRenderer(tokenizer, ChatTemplate(text, "test"))
    found = OutputFormat.choose(None, None, text, render=lambda h, t, c: renderer.render(h, t, c))
    assert found.calls_in_content
    without = SimpleNamespace(output_format=OutputFormat(found.tool_parser), engine=renderer)
    plain = renderer.render(template_messages(without, HISTORY), None, {})  # type: ignore[arg-type]
    assert written not in plain  # the template alone drops them (or minja writes its own JSON for them)
    model = SimpleNamespace(output_format=found, engine=renderer)
    rendered = renderer.render(template_messages(model, HISTORY), None, {})  # type: ignore[arg-type]
    assert written in rendered and "Lyon" in rendered
    assert chosen(tokenizer, (TEMPLATES / "Qwen-Qwen3-0.6B.jinja").read_text()).calls_in_content is False


@pytest.mark.parametrize(
    ("template", "written"),
    [
        # As these templates write a past call (the family probe over OpenVINO GenAI's 146 templates found them).
        (
            "genai-openbmb-MiniCPM3-4B.jinja",
            '<|tool_call_start|>\n```python\nget_weather(city="Paris",days=3)\n```\n<|tool_call_end|>',
        ),
        (
            "genai-tiiuae-Falcon3-3B-Instruct.jinja",
            '<tool_call>\n[\n  {\n    "id": "call00001",\n    "type": "function",\n    "function": {\n'
            '      "name": "get_weather",\n      "arguments": "{\\"city\\": \\"Paris\\", \\"days\\": 3}"\n'
            "    }\n  }\n]\n</tool_call>",
        ),
    ],
)
def test_a_familys_own_writing_of_a_past_call_reads_back(
    tokenizer: ov_genai.Tokenizer, template: str, written: str
) -> None:
    """The format detected for the template reads the call as the template writes it: the model learned that."""
    text = (TEMPLATES / template).read_text()
    renderer = TemplateRenderer(tokenizer, ChatTemplate(text, "test"))
    rendered = "".join(detection.rendered_calls(lambda h, t, c: renderer.render(h, t, c)))
    assert "".join(written.split()) in "".join(rendered.split())  # the template's own writing, whitespace aside
    parser = chosen(tokenizer, text).parser(tools=True, schemas=SCHEMAS)
    parser.feed(written)
    parser.finish()
    assert [(call.name, json.loads(call.arguments)) for call in parser.result.calls] == [
        (detection.PROBE_NAME, detection.PROBE_ARGUMENTS)
    ]


def test_a_template_that_only_switches_thinking_on_gets_the_commonest_block(tokenizer: ov_genai.Tokenizer) -> None:
    """Cogito's template shows no reasoning markup (its model writes <think> blocks by training) but writes another
    system line with enable_thinking: think, said so; one with no switch (Qwen2.5's) still gets none."""
    found = chosen(tokenizer, (TEMPLATES / "ollama-cogito-14b.jinja").read_text())
    assert found.reasoning_parser == "think"
    assert found.reasoning_evidence.startswith("the template shows no reasoning markup but switches thinking on")
    assert chosen(tokenizer, (TEMPLATES / "Qwen-Qwen2.5-7B-Instruct.jinja").read_text()).reasoning_parser is None
