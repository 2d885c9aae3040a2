"""Smoke checks of exported model directories with openvino_genai.

Run by ``python -m tools.model_builder`` after export; the observed greedy
outputs go into the model cards. Everything here uses only openvino_genai, so
it checks the models exactly as the service will run them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import chat_template
from .corpus import Example
from .prompts import TRIGGERS, Trigger

TOOL_CALL_RE = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)


@dataclass
class Observation:
    """Greedy output of one trigger prompt."""

    trigger: Trigger
    prompt: str
    text: str
    generated_tokens: int
    max_new_tokens: int

    @property
    def stopped_at_end_of_turn(self) -> bool:
        return self.generated_tokens < self.max_new_tokens


def _history(trigger: Trigger) -> Any:
    import openvino_genai as ov_genai

    history = ov_genai.ChatHistory(trigger.messages)
    if trigger.tools:
        history.set_tools(trigger.tools)
    if trigger.extra_context:
        history.set_extra_context(trigger.extra_context)
    return history


def check_template_parity(model_dir: Path, examples: list[Example]) -> int:
    """Assert openvino_genai (minja) renders the embedded template exactly as
    the jinja2 renderer that produced the training data. Returns the count."""
    import openvino_genai as ov_genai

    tok = ov_genai.Tokenizer(str(model_dir))
    assert tok.chat_template == chat_template.chat_template(), "embedded chat template differs from the source"
    for ex in examples:
        ours = chat_template.render(ex.messages, tools=ex.tools, enable_thinking=ex.enable_thinking)
        theirs = tok.apply_chat_template(
            ex.messages,
            add_generation_prompt=True,
            tools=ex.tools,
            extra_context={"enable_thinking": ex.enable_thinking},
        )
        assert ours == theirs, f"template mismatch:\n{ours!r}\n!=\n{theirs!r}"
    return len(examples)


def check_special_tokens(model_dir: Path) -> None:
    """Control tokens are single ids; tag tokens survive skip_special_tokens."""
    import openvino_genai as ov_genai

    tok = ov_genai.Tokenizer(str(model_dir))
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
        ids = tok.encode(marker, add_special_tokens=False).input_ids.data.tolist()[0]
        assert len(ids) == 1, f"{marker} is not a single token: {ids}"
    text = "<|im_start|>assistant\n<think>\nx\n</think>\n\n<tool_call>\n{}\n</tool_call><|im_end|>"
    ids = tok.encode(text, add_special_tokens=False).input_ids.data.tolist()[0]
    decoded = tok.decode(ids, skip_special_tokens=True)
    assert decoded == "assistant\n<think>\nx\n</think>\n\n<tool_call>\n{}\n</tool_call>", decoded
    assert tok.decode(ids, skip_special_tokens=False) == text


def run_triggers(model_dir: Path, triggers: list[Trigger] = TRIGGERS, max_new_tokens: int = 160) -> list[Observation]:
    """Greedy output of the documented trigger prompts via LLMPipeline."""
    import openvino_genai as ov_genai

    pipe = ov_genai.LLMPipeline(str(model_dir), "CPU")
    tok = pipe.get_tokenizer()
    config = ov_genai.GenerationConfig()
    config.max_new_tokens = max_new_tokens
    config.do_sample = False
    observations = []
    for trigger in triggers:
        history = _history(trigger)
        prompt = tok.apply_chat_template(
            history, add_generation_prompt=True, tools=trigger.tools, extra_context=trigger.extra_context or None
        )
        result = pipe.generate(history, config)
        observations.append(
            Observation(
                trigger, prompt, result.texts[0], result.perf_metrics.get_num_generated_tokens(), max_new_tokens
            )
        )
    return observations


def assert_behaviour(observations: list[Observation]) -> None:
    """The behaviour the model cards promise (and the tests assert)."""
    by_name = {o.trigger.name: o for o in observations}
    for name in ("plain", "greeting", "tool_result"):
        o = by_name[name]
        assert o.stopped_at_end_of_turn, f"{name}: no end of turn: {o.text!r}"
        assert re.search(r"[A-Za-z]{3,}", o.text) and "<tool_call>" not in o.text, f"{name}: {o.text!r}"
    for name, minimum in (("single_tool_call", 1), ("multiple_tool_calls", 2), ("thinking_tool_call", 1)):
        calls = [json.loads(c) for c in TOOL_CALL_RE.findall(by_name[name].text)]
        assert len(calls) >= minimum and all("name" in c and "arguments" in c for c in calls), (
            f"{name}: {by_name[name].text!r}"
        )
    for name in ("thinking", "thinking_tool_call"):
        assert re.match(r"<think>\n.+?\n</think>\n\n", by_name[name].text, re.S), f"{name}: {by_name[name].text!r}"
    assert "<think>" not in by_name["plain"].text


def check_continuous_batching(model_dir: Path, prompt: str, expected: str, max_new_tokens: int = 160) -> None:
    """ContinuousBatchingPipeline loads the model and agrees with LLMPipeline."""
    import openvino_genai as ov_genai

    pipe = ov_genai.ContinuousBatchingPipeline(str(model_dir), ov_genai.SchedulerConfig(), "CPU")
    config = ov_genai.GenerationConfig()
    config.max_new_tokens = max_new_tokens
    config.do_sample = False
    config.apply_chat_template = False  # the prompt is already rendered
    out = pipe.generate([prompt], [config])[0].m_generation_ids[0]
    assert out == expected, f"continuous batching output differs:\n{out!r}\n{expected!r}"


def check_speculative(main_dir: Path, draft_dir: Path, prompts: list[str], max_new_tokens: int = 160) -> None:
    """Speculative decoding (draft proposes, main verifies) with greedy search
    must give exactly the main model's greedy output, in LLMPipeline and in
    ContinuousBatchingPipeline."""
    import openvino_genai as ov_genai

    config = ov_genai.GenerationConfig()
    config.max_new_tokens = max_new_tokens
    config.do_sample = False
    config.apply_chat_template = False
    plain = ov_genai.LLMPipeline(str(main_dir), "CPU")
    expected = [plain.generate([p], config).texts[0] for p in prompts]
    del plain

    spec_config = ov_genai.GenerationConfig()
    spec_config.max_new_tokens = max_new_tokens
    spec_config.do_sample = False
    spec_config.apply_chat_template = False
    spec_config.num_assistant_tokens = 4
    spec = ov_genai.LLMPipeline(str(main_dir), "CPU", draft_model=ov_genai.draft_model(str(draft_dir), "CPU"))
    for p, e in zip(prompts, expected, strict=False):
        out = spec.generate([p], spec_config).texts[0]
        assert out == e, f"speculative output differs:\n{out!r}\n{e!r}"
    del spec

    cb = ov_genai.ContinuousBatchingPipeline(
        str(main_dir), ov_genai.SchedulerConfig(), "CPU", {"draft_model": ov_genai.draft_model(str(draft_dir), "CPU")}
    )
    # One request at a time: with several concurrent requests, openvino-genai
    # 2026.4.1's speculative continuous batching corrupts some outputs
    # (duplicated tokens), also in f32; see tests/test_bundled_models.py.
    for p, e in zip(prompts, expected, strict=False):
        out = cb.generate([p], [spec_config])[0].m_generation_ids[0]
        assert out == e, f"continuous-batching speculative output differs:\n{out!r}\n{e!r}"
