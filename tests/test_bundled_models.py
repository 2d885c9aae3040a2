"""The bundled models load with openvino_genai and behave as their model cards say.

Runs with the runtime dependencies only (openvino, openvino-genai,
openvino-tokenizers): no torch, no imports from tools.model_builder. The
prompts are the ones documented in service/bundled_models/*/MODEL_CARD.md and
are rendered through openvino_genai's own chat-template engine, so the
template is under test too. All generation is greedy, hence deterministic.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import openvino_genai as ov_genai
import pytest

MODELS = Path(__file__).parents[1] / "service" / "bundled_models"
MAIN = MODELS / "tiny-chat"
DRAFT = MODELS / "tiny-chat-draft"
MAX_NEW_TOKENS = 160

SYSTEM = "You are a helpful assistant."
WEATHER_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "The city name."}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "Get the local time in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "The city name."}},
                "required": ["city"],
            },
        },
    },
]
PLAIN = [{"role": "user", "content": "Who are you?"}]
GREETING = [{"role": "user", "content": "Hello!"}]
SINGLE_TOOL = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": "What's the weather like in Paris?"},
]
WEATHER_IN_PARIS = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": "What is the weather in Paris?"},
]
MULTI_TOOL = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": "What is the weather in Paris and in Rome?"},
]
TOOL_RESULT = [
    *WEATHER_IN_PARIS,
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "call_0", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "call_0", "content": '{"city": "Paris", "temperature": 18, "condition": "sunny"}'},
]
TOOL_CALL_RE = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)
THINK_RE = re.compile(r"^<think>\n(.+?)\n</think>\n\n(.+)$", re.S)


def history(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, enable_thinking: bool | None = None
) -> ov_genai.ChatHistory:
    h = ov_genai.ChatHistory(messages)
    if tools:
        h.set_tools(tools)
    if enable_thinking is not None:
        h.set_extra_context({"enable_thinking": enable_thinking})
    return h


def greedy(**overrides: Any) -> ov_genai.GenerationConfig:
    config = ov_genai.GenerationConfig()
    config.max_new_tokens = MAX_NEW_TOKENS
    config.do_sample = False
    for key, value in overrides.items():
        setattr(config, key, value)
    return config


@pytest.fixture(scope="module")
def main_pipe() -> ov_genai.LLMPipeline:
    return ov_genai.LLMPipeline(str(MAIN), "CPU")


@pytest.fixture(scope="module")
def draft_pipe() -> ov_genai.LLMPipeline:
    return ov_genai.LLMPipeline(str(DRAFT), "CPU")


def generate(pipe: ov_genai.LLMPipeline, h: ov_genai.ChatHistory) -> tuple[str, int]:
    result = pipe.generate(h, greedy())
    return result.texts[0], result.perf_metrics.get_num_generated_tokens()


def prompt_text(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, enable_thinking: bool | None = None
) -> str:
    tok = ov_genai.Tokenizer(str(MAIN))
    extra = None if enable_thinking is None else {"enable_thinking": enable_thinking}
    return tok.apply_chat_template(messages, add_generation_prompt=True, tools=tools, extra_context=extra)


def tool_calls(text: str) -> list[dict[str, Any]]:
    return [json.loads(block) for block in TOOL_CALL_RE.findall(text)]


# --------------------------------------------------------------------------
# Files and tokenizer


@pytest.mark.parametrize("model_dir", [MAIN, DRAFT], ids=["tiny-chat", "tiny-chat-draft"])
def test_model_dir_is_complete_and_small(model_dir: Path) -> None:
    for name in (
        "openvino_model.xml",
        "openvino_model.bin",
        "openvino_tokenizer.xml",
        "openvino_tokenizer.bin",
        "openvino_detokenizer.xml",
        "openvino_detokenizer.bin",
        "config.json",
        "generation_config.json",
        "MODEL_CARD.md",
    ):
        assert (model_dir / name).is_file(), name
    assert not list(model_dir.glob("*.safetensors")) and not list(model_dir.glob("*.pt*"))
    assert sum(p.stat().st_size for p in model_dir.iterdir()) < 5 * 1024 * 1024
    config = json.loads((model_dir / "config.json").read_text())
    assert config["max_position_embeddings"] >= 1024
    tok = ov_genai.Tokenizer(str(model_dir))
    im_end = tok.encode("<|im_end|>", add_special_tokens=False).input_ids.data[0].tolist()
    eos = json.loads((model_dir / "generation_config.json").read_text())["eos_token_id"]
    assert im_end[0] in (eos if isinstance(eos, list) else [eos])
    assert ov_genai.GenerationConfig(str(model_dir / "generation_config.json")).eos_token_id in eos


def test_models_share_tokenizer_and_template() -> None:
    main, draft = ov_genai.Tokenizer(str(MAIN)), ov_genai.Tokenizer(str(DRAFT))
    assert main.get_vocab() == draft.get_vocab()
    assert main.chat_template == draft.chat_template
    assert "<tool_call>" in main.chat_template and "enable_thinking" in main.chat_template


def test_control_tokens_are_single_and_tags_survive_decoding() -> None:
    tok = ov_genai.Tokenizer(str(MAIN))
    for marker in (
        "<|im_start|>",
        "<|im_end|>",
        "<|endoftext|>",
        "<tool_call>",
        "</tool_call>",
        "<think>",
        "</think>",
        "<tool_response>",
        "</tool_response>",
    ):
        assert len(tok.encode(marker, add_special_tokens=False).input_ids.data[0]) == 1, marker
    ids = (
        tok.encode("<think>\nhm\n</think>\n\n<tool_call>\n{}\n</tool_call><|im_end|>", add_special_tokens=False)
        .input_ids.data[0]
        .tolist()
    )
    # Qwen convention: ChatML tokens are special, tool/think tags are not.
    assert tok.decode(ids, skip_special_tokens=True) == "<think>\nhm\n</think>\n\n<tool_call>\n{}\n</tool_call>"


# --------------------------------------------------------------------------
# Chat template through openvino_genai's engine


def test_template_renders_tools_calls_and_results() -> None:
    text = prompt_text(TOOL_RESULT, tools=WEATHER_TOOLS)
    assert text.startswith("<|im_start|>system\nYou are a helpful assistant.\n\n# Tools\n")
    assert "<tools>\n" + json.dumps(WEATHER_TOOLS[0]) + "\n" + json.dumps(WEATHER_TOOLS[1]) + "\n</tools>" in text
    assert (
        '<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
        "</tool_call><|im_end|>\n"
    ) in text
    assert "<|im_start|>user\n<tool_response>\n" + TOOL_RESULT[-1]["content"] + "\n</tool_response><|im_end|>\n" in text
    # Arguments given as an object render the same as the JSON string form.
    as_object = json.loads(json.dumps(TOOL_RESULT))
    as_object[2]["tool_calls"][0]["function"]["arguments"] = {"city": "Paris"}
    assert prompt_text(as_object, tools=WEATHER_TOOLS) == text


def test_template_default_system_and_developer_role() -> None:
    assert prompt_text(PLAIN).startswith("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n")
    dev = [{"role": "developer", "content": "Be brief."}, *PLAIN]
    assert prompt_text(dev).startswith("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n")


def test_template_thinking_switch() -> None:
    on = prompt_text(PLAIN, enable_thinking=True)
    assert on.endswith("<|im_start|>assistant\n")
    for off in (prompt_text(PLAIN), prompt_text(PLAIN, enable_thinking=False)):
        assert off == on + "<think>\n\n</think>\n\n"
    # ChatHistory's extra context reaches the template too.
    tok = ov_genai.Tokenizer(str(MAIN))
    assert tok.apply_chat_template(history(PLAIN, enable_thinking=True), add_generation_prompt=True) == on


# --------------------------------------------------------------------------
# Behaviour promised by the model cards


# The draft is too small to answer "Who are you?" cleanly (see its model card).
@pytest.mark.parametrize(
    ("pipe_name", "messages"), [("main_pipe", PLAIN), ("main_pipe", GREETING), ("draft_pipe", GREETING)]
)
def test_plain_chat_gives_words_and_ends_turn(
    pipe_name: str, messages: list[dict[str, Any]], request: pytest.FixtureRequest
) -> None:
    pipe = request.getfixturevalue(pipe_name)
    text, n_tokens = generate(pipe, history(messages))
    words = re.findall(r"[A-Za-z]+", text)
    assert len(words) >= 3, text
    vocab = pipe.get_tokenizer().get_vocab()  # bytes -> id
    # Words the tokenizer learned as whole tokens (words never carry their leading space).
    known = [w for w in words if w.encode() in vocab]
    assert len(known) >= 0.8 * len(words), text
    assert "<think>" not in text and "<tool_call>" not in text
    assert n_tokens < MAX_NEW_TOKENS, "generation did not stop at <|im_end|>"


def test_single_tool_call(main_pipe: ov_genai.LLMPipeline) -> None:
    text, n_tokens = generate(main_pipe, history(SINGLE_TOOL, tools=WEATHER_TOOLS))
    calls = tool_calls(text)
    assert len(calls) == 1, text
    assert calls[0]["name"] == "get_weather"
    assert calls[0]["arguments"] == {"city": "Paris"}
    assert n_tokens < MAX_NEW_TOKENS


def test_multiple_tool_calls(main_pipe: ov_genai.LLMPipeline) -> None:
    text, _ = generate(main_pipe, history(MULTI_TOOL, tools=WEATHER_TOOLS))
    calls = tool_calls(text)
    assert len(calls) >= 2, text
    for call in calls:
        assert call["name"] == "get_weather" and isinstance(call["arguments"], dict), call
    assert {c["arguments"].get("city") for c in calls} == {"Paris", "Rome"}


def test_answer_from_tool_result(main_pipe: ov_genai.LLMPipeline) -> None:
    text, n_tokens = generate(main_pipe, history(TOOL_RESULT, tools=WEATHER_TOOLS))
    assert "<tool_call>" not in text and re.search(r"[A-Za-z]{3,}", text), text
    assert n_tokens < MAX_NEW_TOKENS


def test_thinking_block_when_enabled(main_pipe: ov_genai.LLMPipeline) -> None:
    text, n_tokens = generate(main_pipe, history(GREETING, enable_thinking=True))
    match = THINK_RE.match(text)
    assert match, text
    assert re.search(r"[A-Za-z]{3,}", match.group(1)) and re.search(r"[A-Za-z]{3,}", match.group(2))
    assert n_tokens < MAX_NEW_TOKENS


def test_thinking_then_tool_call(main_pipe: ov_genai.LLMPipeline) -> None:
    text, _ = generate(main_pipe, history(WEATHER_IN_PARIS, tools=WEATHER_TOOLS, enable_thinking=True))
    match = THINK_RE.match(text)
    assert match, text
    assert [c["name"] for c in tool_calls(match.group(2))] == ["get_weather"]


# --------------------------------------------------------------------------
# Pipelines: continuous batching and speculative decoding


SPEC_PROMPTS = [
    (PLAIN, None, None),
    (SINGLE_TOOL, WEATHER_TOOLS, None),
    (MULTI_TOOL, WEATHER_TOOLS, None),
    (GREETING, None, True),
    (TOOL_RESULT, WEATHER_TOOLS, None),
]


@pytest.fixture(scope="module")
def rendered_prompts() -> list[str]:
    return [prompt_text(m, tools=t, enable_thinking=e) for m, t, e in SPEC_PROMPTS]


@pytest.mark.parametrize("model_dir", [MAIN, DRAFT], ids=["tiny-chat", "tiny-chat-draft"])
def test_continuous_batching_pipeline(model_dir: Path, rendered_prompts: list[str]) -> None:
    config = greedy(apply_chat_template=False)
    expected = [ov_genai.LLMPipeline(str(model_dir), "CPU").generate([p], config).texts[0] for p in rendered_prompts]
    cb = ov_genai.ContinuousBatchingPipeline(str(model_dir), ov_genai.SchedulerConfig(), "CPU")
    results = cb.generate(rendered_prompts, [config] * len(rendered_prompts))
    assert [r.m_generation_ids[0] for r in results] == expected


def test_speculative_decoding_equals_main_greedy(main_pipe: ov_genai.LLMPipeline, rendered_prompts: list[str]) -> None:
    config = greedy(apply_chat_template=False)
    expected = [main_pipe.generate([p], config).texts[0] for p in rendered_prompts]
    spec = ov_genai.LLMPipeline(str(MAIN), "CPU", draft_model=ov_genai.draft_model(str(DRAFT), "CPU"))
    spec_config = greedy(apply_chat_template=False, num_assistant_tokens=4)
    assert [spec.generate([p], spec_config).texts[0] for p in rendered_prompts] == expected


def spec_cb_pipeline() -> ov_genai.ContinuousBatchingPipeline:
    return ov_genai.ContinuousBatchingPipeline(
        str(MAIN), ov_genai.SchedulerConfig(), "CPU", {"draft_model": ov_genai.draft_model(str(DRAFT), "CPU")}
    )


def test_speculative_decoding_in_continuous_batching(
    main_pipe: ov_genai.LLMPipeline, rendered_prompts: list[str]
) -> None:
    config = greedy(apply_chat_template=False)
    expected = [main_pipe.generate([p], config).texts[0] for p in rendered_prompts]
    cb = spec_cb_pipeline()
    spec_config = greedy(apply_chat_template=False, num_assistant_tokens=4)
    assert [cb.generate([p], [spec_config])[0].m_generation_ids[0] for p in rendered_prompts] == expected


@pytest.mark.xfail(
    strict=False,
    reason="openvino-genai 2026.4.1: speculative decoding in ContinuousBatchingPipeline "
    "corrupts some outputs (duplicated tokens) when several requests run together, also in f32",
)
def test_speculative_decoding_batched_requests(main_pipe: ov_genai.LLMPipeline, rendered_prompts: list[str]) -> None:
    config = greedy(apply_chat_template=False)
    expected = [main_pipe.generate([p], config).texts[0] for p in rendered_prompts]
    results = spec_cb_pipeline().generate(
        rendered_prompts, [greedy(apply_chat_template=False, num_assistant_tokens=4)] * len(rendered_prompts)
    )
    assert [r.m_generation_ids[0] for r in results] == expected
