"""SamplingParams <-> openvino_genai.GenerationConfig: the one place that translates between them.

``generation_config`` runs in the engine process (and in the grammar
checker); ``model_defaults`` reads a model's generation_config.json into the
plain form the API layer starts every request from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openvino_genai as ov_genai

from ovserve.service.engine.sampling import OutputConstraint, SamplingParams

# SamplingParams field -> GenerationConfig attribute, where the names differ.
_RENAMED = {"seed": "rng_seed"}
# SamplingParams fields with no GenerationConfig attribute: the biased lane applies them (biased_lane.py).
LANE_FIELDS = frozenset({"logit_bias", "bad_words", "isolated"})
# GenerationConfig attributes a model's generation_config.json may set, as SamplingParams fields.
_DEFAULT_FIELDS = (
    "max_new_tokens", "do_sample", "temperature", "top_p", "top_k", "min_p", "repetition_penalty",
    "frequency_penalty", "presence_penalty", "no_repeat_ngram_size", "num_assistant_tokens",
    "assistant_confidence_threshold", "eos_token_id", "stop_token_ids", "length_penalty", "diversity_penalty",
)  # fmt: skip


def config_attribute(field: str) -> str:
    """The GenerationConfig attribute a SamplingParams field sets."""
    return _RENAMED.get(field, field)


def generation_config(params: SamplingParams) -> ov_genai.GenerationConfig:
    """The engine's config for ``params`` (its own defaults where a field is None)."""
    kwargs: dict[str, object] = {}
    for name, value in params.settings().items():
        if name == "constraint" or name in LANE_FIELDS:
            continue
        kwargs[config_attribute(name)] = set(value) if isinstance(value, frozenset) else value
    if params.constraint is not None:  # the binding refuses an explicit None
        kwargs["structured_output_config"] = structured_output_config(params.constraint)
    return ov_genai.GenerationConfig(**kwargs)


def structured_output_config(constraint: OutputConstraint) -> ov_genai.StructuredOutputConfig:
    """The engine's form of an output constraint."""
    return ov_genai.StructuredOutputConfig(**{constraint.kind: constraint.value})


def model_defaults(model_dir: Path, eos_token_id: int) -> SamplingParams:
    """What the model's generation_config.json sets, as SamplingParams (unset fields stay None).

    ``eos_token_id``: the tokenizer's, for a file that names none.
    """
    path = model_dir / "generation_config.json"
    config = ov_genai.GenerationConfig(str(path)) if path.is_file() else ov_genai.GenerationConfig()
    if config.eos_token_id == -1:
        config.set_eos_token_id(eos_token_id)
    # Keep only what the file set: the binding's own defaults include sentinels
    # (SIZE_MAX, eos_token_id -1) that its constructor refuses.
    unset = ov_genai.GenerationConfig()
    values: dict[str, Any] = {}
    for name in _DEFAULT_FIELDS:
        value = getattr(config, config_attribute(name))
        if value != getattr(unset, config_attribute(name)):
            values[name] = frozenset(value) if isinstance(value, set) else value
    return SamplingParams(**values)
