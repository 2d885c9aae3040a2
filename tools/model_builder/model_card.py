"""MODEL_CARD.md for each bundled model, filled with observed outputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .smoke import Observation
from .train import MODEL_SHAPES, TrainConfig, TrainResult


def _fence(text: str, lang: str = "") -> str:
    return f"```{lang}\n{text}\n```"


HELD_OUT_CASES = 40
# How the held-out prompts are answered: as the model writes alone, and under the service's default tool-guided
# generation (agent_eval.tool_guide), which issue 47's bar is scored with.
SCORE_MODES = {"unguided": "alone", "guided": "tool-guided"}
SCORE_MEANINGS = {
    "tool_chosen": "a question an offered tool answers gets one call of that tool with the question's value",
    "tool_not_chosen": "small talk, a topic no offered tool covers, or a tool's result gets text (holding the "
    "result), no call",
    "json_valid": "facts in prose, the schema in instructor's or pydantic-ai's instructions: exactly the JSON "
    "object of those facts",
}


def write_model_card(
    out_dir: Path,
    name: str,
    *,
    train_cfg: TrainConfig,
    result: TrainResult,
    corpus_info: dict[str, Any],
    tokenizer_info: dict[str, Any],
    generation_config: dict[str, Any],
    size_bytes: int,
    observations: list[Observation] | None,
    known_wrong: list[Observation] | None = None,
    main_model: str | None = None,
    agent_scores: dict[str, dict[str, float]] | None = None,
    shape: str | None = None,
) -> None:
    """Write ``out_dir/MODEL_CARD.md``; ``shape``: the model's train.MODEL_SHAPES entry (default: ``name``'s);
    ``agent_scores``: the held-out scores per SCORE_MODES mode."""
    shape = MODEL_SHAPES[shape or name]
    agent_recipe = "agent_call" in corpus_info["kinds"]  # --agent-recipe's corpus
    lines = [
        f"# {name}",
        "",
        (
            f"Draft model for speculative decoding with `{main_model}` (same tokenizer and chat template). "
            if main_model
            else "The model ovserve serves when no model is configured. "
        )
        + "A tiny Llama trained from scratch on a synthetic chat corpus, for tests and demos. "
        "It produces real English words, ends its turns with `<|im_end|>`, emits Hermes/Qwen "
        "`<tool_call>` blocks when tools are offered, and reasons inside `<think>...</think>` "
        "when thinking is enabled. It knows nothing beyond its corpus.",
        "",
        "Rebuild (deterministic; needs the `export` extra):",
        "",
        _fence("python -m tools.model_builder --out service/bundled_models", "sh"),
        "",
        "## How it was built",
        "",
        f"- **Corpus**: {corpus_info['examples']} generated examples (seed {corpus_info['seed']}, "
        f"sha256 `{corpus_info['sha256'][:16]}…`): {corpus_info['kinds']}. "
        f"{corpus_info['thinking']} of them with `enable_thinking=true`. Text sources: sentences of the "
        "license texts in `/usr/share/common-licenses`, first lines of Python 3.11 docstrings, templated "
        'small talk, capitals, animal sounds, colours, small sums, echo ("Repeat after me: ...") tasks, '
        "and tool dialogues over "
        "`get_weather`, `get_time`, `convert_currency`, `get_stock_price` (see `tools/model_builder/corpus.py`)"
        + (
            "."
            if not agent_recipe
            else ", "
            "and agent dialogues over generated tools (`tools/model_builder/agent_corpus.py`): a question names "
            "a topic (`What is the rent in Velmor?`) and the tool that covers it names it too (`get_rent`, "
            "`Look up the current rent for a location.`), among other tools or none that fit; results answered in "
            "text, JSON or pydantic-ai's `final_result` call; the Agents SDK's handoffs; JSON answers copying "
            "facts from prose, with the schema in the instructions (instructor's, pydantic-ai's prompts) or set "
            "by a client's grammar. Most places and people are made-up names, so values are copied, not recalled."
        ),
        "- **Tokenizer**: byte-level BPE trained with `tokenizers`, no BOS. Pre-tokenisation splits letter runs, "
        "digit runs, punctuation runs and whitespace into separate pieces, so a word never carries its leading "
        'space and `Paris` is the same token in the user\'s text and in `"city": "Paris"` (easy copying). '
        f"{tokenizer_info['vocab_size']} ids. "
        "Special (skipped by `skip_special_tokens`): "
        f"{tokenizer_info['special']}. Single-token but not special (kept in decoded text): "
        f"{tokenizer_info['tags']}.",
        f"- **Architecture**: `LlamaForCausalLM`, {shape['num_hidden_layers']} layer(s), hidden "
        f"{shape['hidden_size']}, MLP {shape['intermediate_size']}, {shape['num_attention_heads']} heads, "
        f"tied embeddings, RoPE, `max_position_embeddings` 2048; {result.parameters:,} parameters.",
        f"- **Training**: {result.steps} AdamW steps (peak lr {train_cfg.lr}, warm-up {train_cfg.warmup_steps}, "
        f"cosine to 10%), ~{train_cfg.tokens_per_batch} padded tokens per step, seed {train_cfg.seed}, "
        + (f"{train_cfg.threads} CPU threads" if train_cfg.device == "cpu" else f"{train_cfg.device}, bf16 autocast")
        + f", torch {', '.join(result.torch_versions) or 'unrecorded'}: {result.seconds:.0f} s, final loss "
        f"{result.final_loss} (smoothed cross-entropy on the assistant completion; prompt tokens are trained "
        f"with weight {train_cfg.prompt_weight}, the generation prompt and pre-filled think block not at all).",
        "- **Export**: `optimum-cli export openvino --task text-generation-with-past --weight-format fp16` "
        "(optimum-intel + openvino-tokenizers); the chat template is embedded in `openvino_tokenizer.xml` "
        "and also saved as `chat_template.jinja`. Torch weights are not shipped.",
        f"- **Size**: {size_bytes / 1e6:.2f} MB of model files (this card excluded).",
        f"- **generation_config.json**: `{json.dumps(generation_config)}` "
        "(`<|im_end|>` and `<|endoftext|>` stop generation; no default `max_new_tokens`).",
        "",
        "## Chat template",
        "",
        "Qwen2.5 layout (ChatML) with Qwen3's thinking switch, in `chat_template.jinja`:",
        "",
        "- `system` or `developer` as the first message becomes the system prompt; otherwise "
        "`You are a helpful assistant.` is used. Later system/developer messages render as system turns.",
        "- `tools` (OpenAI function objects) are listed one JSON per line inside `<tools></tools>` in the "
        "system prompt.",
        '- assistant `tool_calls` render as `<tool_call>\\n{"name": ..., "arguments": ...}\\n</tool_call>` '
        "(arguments may be a JSON string or an object); `tool` messages render as "
        "`<tool_response>\\n...\\n</tool_response>` inside one user turn per run of tool messages.",
        "- earlier reasoning is dropped from history (content up to `</think>` is cut).",
        "- `add_generation_prompt` opens `<|im_start|>assistant\\n`. Unless `enable_thinking` is true the "
        "template then pre-fills an empty `<think>\\n\\n</think>\\n\\n`, so the model answers directly; "
        "with `enable_thinking=true` nothing is pre-filled and the model opens `<think>` itself. "
        "**Thinking is off by default.**",
        "",
    ]
    if observations:
        lines += [
            "## Prompts and observed greedy output",
            "",
            "Rendered with `openvino_genai.ChatHistory` (tools via `set_tools`, flags via "
            '`set_extra_context`) and generated by `openvino_genai.LLMPipeline(dir, "CPU")` with '
            f"`do_sample=False`, `max_new_tokens={observations[0].max_new_tokens}`. Text below is the decoded "
            "output (`skip_special_tokens=True`, so the final `<|im_end|>` is not shown). "
            "The tools JSON used by the tool prompts:",
            "",
            _fence(json.dumps(observations[2].trigger.tools, indent=2), "json"),
            "",
        ]
        for o in observations:
            t = o.trigger
            lines += [f"### {t.name}: {t.description}", ""]
            lines.append(_fence(json.dumps(t.messages, indent=2), "json"))
            flags = [f"tools: {'the tools above' if t.tools else 'none'}"]
            flags.append(
                f"extra_context: `{json.dumps(t.extra_context)}`"
                if t.extra_context
                else "extra_context: none (thinking off)"
            )
            lines += [
                "",
                "; ".join(flags) + f". Expect: {t.expect}.",
                "",
                f"Output ({o.generated_tokens} tokens"
                + (", stopped at `<|im_end|>`" if o.stopped_at_end_of_turn else ", hit max_new_tokens")
                + "):",
                "",
                _fence(o.text),
                "",
            ]
    if agent_scores:
        lines += [
            "## Agent behaviour on held-out tools (measured at build time)",
            "",
            "Greedy replies of this exported model (OpenVINO GenAI) to prompts over topics, places, people and "
            f"schemas the corpus never holds (`held_out.json` beside this card lists them, {HELD_OUT_CASES} "
            "per score, and the scores):",
            "",
            "| score | what passes | " + " | ".join(SCORE_MODES.values()) + " |",
            "|---|---|" + "---|" * len(SCORE_MODES),
            *(
                f"| `{score}` | {SCORE_MEANINGS[score]} | "
                + " | ".join(f"{agent_scores[mode][score]:.0%}" for mode in SCORE_MODES)
                + " |"
                for score in SCORE_MEANINGS
            ),
            "",
            "tool-guided: as the service answers a request that sends tools under `tool_choice: auto` (its default "
            "`tool_guided_generation`): a call the model opens is one of the offered tools, with valid arguments.",
            "",
        ]
    lines += [
        "## Limits",
        "",
        f"- A toy: {result.parameters / 1e6:.2f} M parameters. It learned the *shapes* (turn ends, tool-call "
        "JSON, think blocks, copying values from the user's message) far better than the facts: capitals, "
        "animal sounds and sums are often wrong, license quotations are recombined into near-nonsense, and "
        "numbers copied from tool results are often off. Use it to test plumbing, never content.",
        f"- Trained on conversations up to {train_cfg.max_len} tokens; longer contexts (up to 2048 positions "
        "are accepted) degrade.",
        "- Tool calls work for the four corpus tools with argument values taken from the user message "
        "(cities such as Paris, Rome, London, Tokyo); which tool it picks depends on the phrasing. Unknown "
        "tools or argument shapes produce plausible-looking but arbitrary calls.",
    ]
    for o in known_wrong or []:
        lines.append(
            f"- {o.trigger.description}: `{o.trigger.messages[-1]['content']}`"
            + (" (with the tools above)" if o.trigger.tools else "")
            + f" gives `{o.text.replace(chr(10), ' ')}`."
        )
    lines += [
        "- Runs in bf16 on CPUs with bf16 support (OpenVINO's default inference precision); outputs above "
        "were recorded on such a CPU. Greedy output can differ slightly on other precisions.",
        "",
    ]
    (out_dir / "MODEL_CARD.md").write_text("\n".join(lines))
